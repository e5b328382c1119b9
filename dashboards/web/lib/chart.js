import uPlot from '/dashboard/vendor/uPlot.esm.js';

/**
 * A small time-series chart (uPlot, served by the API itself). `series` is [{ label, values,
 * color }] over `times` (epoch seconds). The canvas is hidden from assistive technology; the
 * figure carries a text summary and each page shows the same numbers in a table.
 *
 * `stacked`: bars, each series on top of the ones before it (drawn as running sums, tallest first,
 * so each bar's coloured parts are the series' own values; the legend shows those values).
 * `timeZone`: the IANA zone the axis reads times in (default the browser's).
 */
export function timeChart(
  container,
  { times, series, summary, valueFormat = (v) => v, stacked = false, timeZone },
) {
  container.replaceChildren();
  const figure = document.createElement('figure');
  figure.className = 'chart';
  figure.setAttribute('role', 'img');
  figure.setAttribute('aria-label', summary);
  const canvasHost = document.createElement('div');
  canvasHost.setAttribute('aria-hidden', 'true');
  figure.append(canvasHost);
  container.append(figure);

  const width = () => Math.max(260, Math.floor(container.clientWidth || 600));
  const options = stacked ? stackedBars(times, series, valueFormat) : lines(times, series, valueFormat);
  const plot = new uPlot(
    {
      width: width(),
      height: 240,
      ...options.opts,
      axes: [{}, { values: (_u, ticks) => ticks.map(valueFormat), size: 70 }],
      ...(timeZone && { tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1e3), timeZone) }),
      legend: { live: true },
    },
    [times, ...options.data],
    canvasHost,
  );
  // Follow the container's width (phone rotation, window resize).
  const observer = new ResizeObserver(() => plot.setSize({ width: width(), height: 240 }));
  observer.observe(container);
  return plot;
}

function lines(times, series, valueFormat) {
  return {
    opts: {
      series: [
        {},
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          fill: s.fill,
          width: 2,
          points: { show: times.length < 60 },
          value: (_u, v) => (v == null ? '—' : valueFormat(v)),
        })),
      ],
      scales: { x: { time: true } },
    },
    data: series.map((s) => s.values),
  };
}

function stackedBars(times, series, valueFormat) {
  // Running sums, drawn from the whole stack down, each over the one before it.
  const sums = [];
  let running = times.map(() => 0);
  for (const s of series) {
    running = running.map((sum, i) => sum + (s.values[i] ?? 0));
    sums.push(running);
  }
  const order = series.map((_, i) => i).reverse();
  const bars = uPlot.paths.bars({ size: [0.8, 48] });
  // Half the narrowest gap on each side, so the first and last bars are whole.
  let gap = Infinity;
  for (let i = 1; i < times.length; i++) gap = Math.min(gap, times[i] - times[i - 1]);
  const pad = Number.isFinite(gap) ? gap / 2 : 1_800;
  return {
    opts: {
      series: [
        {},
        ...order.map((i) => ({
          label: series[i].label,
          stroke: series[i].color,
          fill: series[i].color,
          width: 0,
          paths: bars,
          points: { show: false },
          value: (_u, _v, _si, idx) => (idx == null ? '—' : valueFormat(series[i].values[idx] ?? 0)),
        })),
      ],
      scales: {
        x: { time: true, range: (_u, min, max) => [min - pad, max + pad] },
        y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] },
      },
    },
    data: order.map((i) => sums[i]),
  };
}
