// How numbers and times read on every page.

const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 2 });
const price = new Intl.NumberFormat('en-US', { maximumSignificantDigits: 8 });
const quantity = new Intl.NumberFormat('en-US', { maximumFractionDigits: 8 });
const percent = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });

const missing = (value) => value === null || value === undefined || Number.isNaN(Number(value));

export function money(value) {
  return missing(value) ? '—' : usd.format(Number(value));
}

// Money with its sign, for P&L.
export function pnl(value) {
  if (missing(value)) return '—';
  const number = Number(value);
  return number > 0 ? `+${usd.format(number)}` : usd.format(number);
}

// A value already in percent (1.5 means 1.5 %).
export function pct(value) {
  if (missing(value)) return '—';
  const number = Number(value);
  return `${number > 0 ? '+' : ''}${percent.format(number)} %`;
}

// A fraction (0.42 means 42 %).
export function ratio(value) {
  return missing(value) ? '—' : `${percent.format(Number(value) * 100)} %`;
}

export function px(value) {
  return missing(value) ? '—' : price.format(Number(value));
}

export function qty(value) {
  return missing(value) ? '—' : quantity.format(Number(value));
}

export function when(iso) {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? '—' : date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function duration(seconds) {
  if (missing(seconds)) return '—';
  const s = Math.max(0, Math.floor(Number(seconds)));
  const days = Math.floor(s / 86400);
  const hours = Math.floor((s % 86400) / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  if (days) return `${days} d ${hours} h`;
  if (hours) return `${hours} h ${minutes} min`;
  return `${minutes} min`;
}

// The class that colours a P&L figure.
export function tone(value) {
  if (missing(value) || Number(value) === 0) return 'flat';
  return Number(value) > 0 ? 'gain' : 'loss';
}
