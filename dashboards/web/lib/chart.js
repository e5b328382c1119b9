import uPlot from '/dashboard/vendor/uPlot.esm.js';

/**
 * A small time-series chart (uPlot, served by the API itself). `series` is [{ label, values,
 * color }] over `times` (epoch seconds). The canvas is hidden from assistive technology; the
 * figure carries a text summary and each page shows the same numbers in a table.
 */
export function timeChart(container, { times, series, summary, valueFormat = (v) => v }) {
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
  const plot = new uPlot(
    {
      width: width(),
      height: 240,
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
      axes: [{}, { values: (_u, ticks) => ticks.map(valueFormat), size: 70 }],
      scales: { x: { time: true } },
      legend: { live: true },
    },
    [times, ...series.map((s) => s.values)],
    canvasHost,
  );
  // Follow the container's width (phone rotation, window resize).
  const observer = new ResizeObserver(() => plot.setSize({ width: width(), height: 240 }));
  observer.observe(container);
  return plot;
}
