// Charts: TradingView's lightweight-charts in the app's theme. Its own attribution logo injects a
// style element (refused by the CSP), so it is off and `attribution()` credits the library under
// each chart instead, as its licence asks.

import { createChart } from 'lightweight-charts';

import { h } from './dom.js';
import { px } from './format.js';

export function colours() {
  const style = getComputedStyle(document.documentElement);
  const read = (name) => style.getPropertyValue(name).trim();
  return {
    text: read('--text'), grid: read('--grid'), background: read('--surface'),
    gain: read('--gain'), loss: read('--loss'), accent: read('--accent'), muted: read('--muted'),
  };
}

function themed(c) {
  return {
    layout: { background: { color: c.background }, textColor: c.text, attributionLogo: false },
    grid: { vertLines: { color: c.grid }, horzLines: { color: c.grid } },
  };
}

// A chart in `box` that follows the theme and is removed when the page ends. `restyle(c)` is
// called with the new colours after a theme change (for series colours).
export function themedChart(ctx, box, options = {}, restyle = () => {}) {
  const chart = createChart(box, {
    autoSize: true,
    ...themed(colours()),
    timeScale: { timeVisible: true, secondsVisible: false, rightOffset: 6 },
    localization: { priceFormatter: px },
    ...options,
  });
  const retheme = () => {
    const c = colours();
    chart.applyOptions(themed(c));
    restyle(c);
  };
  document.addEventListener('themechange', retheme);
  ctx.onEnd(() => {
    document.removeEventListener('themechange', retheme);
    chart.remove();
  });
  return chart;
}

export function attribution() {
  return h('p', { class: 'attribution' }, 'Charts by ',
    h('a', { href: 'https://www.tradingview.com/', rel: 'noopener noreferrer', target: '_blank' }, 'TradingView Lightweight Charts™'),
    ' (Copyright © 2025 TradingView, Inc.)');
}
