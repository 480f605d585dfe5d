// The performance page's charts, one point a day: the equity curve, the drawdown below its
// running peak (the day's deepest, as the API computes it), and the daily P&L of completed
// trades. Created on the first data, so a user without trades gets no empty charts.

import { AreaSeries, BaselineSeries, HistogramSeries } from 'lightweight-charts';

import { attribution, colours, themedChart } from '../charts.js';
import { h } from '../dom.js';
import { money, pct, pnl } from '../format.js';

// A theme colour (#rrggbb) made translucent, for area fills.
function fade(hex, alpha) {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return `rgba(${r}, ${g}, ${b}, ${alpha})`;
}

// Daily points: no time of day on the axis.
const daily = (priceFormatter) => ({
  timeScale: { timeVisible: false, fixLeftEdge: true, fixRightEdge: true },
  localization: { priceFormatter },
});

const equityColours = (c) => ({ lineColor: c.accent, topColor: fade(c.accent, 0.3), bottomColor: fade(c.accent, 0.02) });
// Drawdowns are never above 0, but a point at 0 counts as the baseline's top side.
const drawdownColours = (c) => ({
  topLineColor: c.loss, topFillColor1: fade(c.loss, 0), topFillColor2: fade(c.loss, 0),
  bottomLineColor: c.loss, bottomFillColor1: fade(c.loss, 0.05), bottomFillColor2: fade(c.loss, 0.3),
});
const pnlBars = (rows, c) => rows.map((d) => ({ time: d.date, value: d.pnl, color: d.pnl >= 0 ? c.gain : c.loss }));

export function performanceCharts(ctx) {
  const equityBox = h('div', { class: 'chart chart-small', id: 'equity-chart' });
  const drawdownBox = h('div', { class: 'chart chart-small', id: 'drawdown-chart' });
  const pnlBox = h('div', { class: 'chart chart-small', id: 'daily-pnl-chart' });
  const element = h('section', { class: 'charts', id: 'performance-charts', hidden: true },
    h('div', { class: 'card' }, h('h2', {}, 'Equity'), equityBox),
    h('div', { class: 'card' }, h('h2', {}, 'Drawdown from the peak'), drawdownBox),
    h('div', { class: 'card chart-wide' }, h('h2', {}, 'Daily P&L'), pnlBox),
    attribution());

  let series = null;
  let dailyPnl = [];

  function create() {
    const c = colours();
    const equity = themedChart(ctx, equityBox, daily(money), (next) => series.equity.applyOptions(equityColours(next)));
    const under = themedChart(ctx, drawdownBox, daily(pct), (next) => series.drawdown.applyOptions(drawdownColours(next)));
    const bars = themedChart(ctx, pnlBox, daily(pnl), (next) => series.pnl.setData(pnlBars(dailyPnl, next)));
    series = {
      equity: equity.addSeries(AreaSeries, { ...equityColours(c), lineWidth: 2 }),
      drawdown: under.addSeries(BaselineSeries, { ...drawdownColours(c), baseValue: { type: 'price', price: 0 }, lineWidth: 2 }),
      pnl: bars.addSeries(HistogramSeries, {}),
      charts: [equity, under, bars],
    };
  }

  // Draws a performance answer's equity_curve, drawdown_curve and daily_pnl.
  function draw({ equity_curve: curve, drawdown_curve: falls, daily_pnl: days }) {
    element.hidden = false;
    if (!series) create();
    const c = colours();
    dailyPnl = days;
    // A marker on each day while there are few of them (one day alone is only a marker).
    const markers = { pointMarkersVisible: curve.length <= 31 };
    series.equity.applyOptions(markers);
    series.drawdown.applyOptions(markers);
    series.equity.setData(curve.map((p) => ({ time: p.date, value: p.equity })));
    series.drawdown.setData(falls.map((p) => ({ time: p.date, value: p.drawdown_pct })));
    series.pnl.setData(pnlBars(days, c));
    for (const chart of series.charts) chart.timeScale().fitContent();
    equityBox.dataset.points = String(curve.length);
    drawdownBox.dataset.points = String(falls.length);
    pnlBox.dataset.points = String(days.length);
  }

  return { element, draw };
}
