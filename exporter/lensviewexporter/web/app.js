// The InterconnectLens view: per node, every component and direction on one time axis (uPlot),
// the diagnosis verdict and its history, the RDMA ports' counters and the GPUDirect readiness.
// It polls the collector's own JSON API (/api/nodes, /api/node) and talks to no other host.
'use strict';

(function () {
  const state = {
    node: null,
    owner: '', // the pod or job the view is narrowed to (ownerview.go ids), '' for the whole node
    series: new Map(), // id -> {meta, t: [ms], v: []}
    view: null,
    chart: null, chartKey: '',
    portChart: null, portKey: null,
    windowMs: 30 * 60 * 1000,
    refreshMs: 2000,
    drawn: {}, // series label -> points uPlot drew in its last draw (drawSeries hook)
    updates: 0,
    errors: 0,
  };
  window.lens = state;

  // Colours keep the directions apart as the paper does (TX green, RX blue), host memory reads
  // orange and writes purple; the components of one direction differ in shade and dash.
  const palette = {
    transmit: { rnic: '#1a7f37', netdev: '#74c476', cpu_pcie: '#00441b', gpu_pcie: '#41ab5d', gpu_nvlink: '#a1d99b', gpu_c2c: '#238b45', gpu_memory: '#006d2c' },
    receive: { rnic: '#1f4fb4', netdev: '#6baed6', cpu_pcie: '#08306b', gpu_pcie: '#4292c6', gpu_nvlink: '#9ecae1', gpu_c2c: '#2171b5', gpu_memory: '#084594' },
    read: { cpu_memory: '#e66101', gpu_memory: '#fdb863' },
    write: { cpu_memory: '#5e3c99', gpu_memory: '#b2abd2' },
    // An AMD GPU's PCIe, its two directions as one figure: between the TX green and the RX blue.
    both: { gpu_pcie: '#2c7f7b' },
  };
  const dashes = { rnic: [], netdev: [2, 3], cpu_pcie: [10, 4], cpu_memory: [], gpu_pcie: [6, 2, 2, 2], gpu_nvlink: [1, 2], gpu_c2c: [4, 4], gpu_memory: [8, 2] };
  const ncclColours = ['#e7298a', '#ce1256', '#df65b0', '#980043'];
  const portColours = ['#d62728', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#7f7f7f'];

  function styleFor(meta, i) {
    // A port's bursts (the rnic receiver's fast sampler) in its average's colour: the peak
    // window rate dotted, the share of time at or above a share of the line rate dashed, thin.
    if (meta.kind === 'peak' || meta.kind === 'time_above') {
      const c = (palette[meta.direction] || {})[meta.component] || '#555';
      return meta.kind === 'peak' ? { stroke: c, dash: [2, 3], width: 2 } : { stroke: c, dash: [6, 3], width: 1 };
    }
    if (meta.axis === 'ratio') return { stroke: '#b2182b', dash: [3, 3], width: 1.5 };
    if (meta.axis === 'events') return { stroke: portColours[i % portColours.length], dash: [], width: 1.5 };
    // NCCL's bus bandwidth per collective type (nccl.collective.last_bus_bandwidth): magenta, dotted.
    if (meta.component === 'nccl') return { stroke: ncclColours[i % ncclColours.length], dash: [2, 2], width: 2.5 };
    const byDir = palette[meta.direction] || {};
    return { stroke: byDir[meta.component] || '#555', dash: dashes[meta.component] || [], width: meta.component === 'rnic' ? 2.5 : 1.75 };
  }

  // Decimal units, as NICs and the paper count bandwidth (2.47 GB/s).
  function fmtBytes(v) {
    if (v == null || !isFinite(v)) return '–';
    const units = [[1e12, 'TB/s'], [1e9, 'GB/s'], [1e6, 'MB/s'], [1e3, 'kB/s']];
    for (const [d, u] of units) if (Math.abs(v) >= d) return (v / d).toFixed(3) + ' ' + u;
    return v.toFixed(0) + ' B/s';
  }
  function fmtBytesAxis(v) {
    const units = [[1e12, 'TB/s'], [1e9, 'GB/s'], [1e6, 'MB/s'], [1e3, 'kB/s']];
    for (const [d, u] of units) if (Math.abs(v) >= d) return +(v / d).toFixed(2) + ' ' + u;
    return v + ' B/s';
  }
  function fmtPercent(v) { return v == null ? '–' : (v * 100).toFixed(1) + ' %'; }
  function fmtCount(v) {
    if (v == null || !isFinite(v)) return '–';
    if (Math.abs(v) >= 1e9) return (v / 1e9).toFixed(3) + ' G';
    if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(3) + ' M';
    if (Math.abs(v) >= 1e3) return (v / 1e3).toFixed(3) + ' k';
    return v.toFixed(1);
  }
  // Axis ticks of the log-scaled port chart: 10k/s, 1M/s.
  function fmtCountAxis(v) {
    if (v == null) return '';
    for (const [d, u] of [[1e9, 'G'], [1e6, 'M'], [1e3, 'k']]) if (Math.abs(v) >= d) return Number((v / d).toPrecision(3)) + u + '/s';
    return Number(v.toPrecision(3)) + '/s';
  }
  function fmtValue(meta, v) {
    if (meta.axis === 'ratio') return fmtPercent(v);
    if (meta.axis === 'events') return fmtCount(v) + '/s';
    return fmtBytes(v);
  }
  function fmtNumber(v) {
    if (v == null || !isFinite(v)) return '–';
    if (v === 0) return '0';
    return Math.abs(v) >= 1000 ? v.toFixed(0) : Number(v.toPrecision(3)).toString();
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }

  // ---- data ----

  async function getJSON(url) {
    const r = await fetch(url, { cache: 'no-store' });
    if (!r.ok) {
      const e = new Error(url + ': ' + r.status);
      e.status = r.status;
      throw e;
    }
    return r.json();
  }

  function merge(view) {
    const oldest = view.now - view.window_ms;
    const seen = new Set();
    for (const s of view.series) {
      seen.add(s.id);
      let cur = state.series.get(s.id);
      if (!cur) {
        cur = { meta: s, t: [], v: [] };
        state.series.set(s.id, cur);
      }
      cur.meta = s;
      const last = cur.t.length ? cur.t[cur.t.length - 1] : -Infinity;
      for (let i = 0; i < s.t.length; i++) {
        if (s.t[i] > last) { cur.t.push(s.t[i]); cur.v.push(s.v[i]); }
      }
      let cut = 0;
      while (cut < cur.t.length && cur.t[cut] < oldest) cut++;
      if (cut) { cur.t.splice(0, cut); cur.v.splice(0, cut); }
    }
    for (const id of [...state.series.keys()]) if (!seen.has(id)) state.series.delete(id);
  }

  function orderedSeries(pred) {
    // The API sorts along the data path; keep its order.
    const out = [];
    for (const s of state.view.series) {
      const cur = state.series.get(s.id);
      if (cur && pred(cur.meta)) out.push(cur);
    }
    return out;
  }

  function tableOf(list, map) {
    if (!list.length) return [[]];
    const tables = list.map(s => [s.t.map(t => t / 1000), s.v.map(map)]);
    return window.uPlot.join(tables);
  }

  // ---- charts ----

  function nearest(cur, tMs, maxGapMs) {
    const t = cur.t;
    if (!t.length) return null;
    let lo = 0, hi = t.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (t[mid] < tMs) lo = mid + 1; else hi = mid;
    }
    let best = lo;
    if (lo > 0 && Math.abs(t[lo - 1] - tMs) < Math.abs(t[lo] - tMs)) best = lo - 1;
    return Math.abs(t[best] - tMs) <= maxGapMs ? cur.v[best] : null;
  }

  function tooltipPlugin(list) {
    const tip = document.getElementById('tooltip');
    return {
      hooks: {
        setCursor: u => {
          const left = u.cursor.left, top = u.cursor.top;
          if (left == null || left < 0 || u.cursor.idx == null) { tip.hidden = true; return; }
          const tSec = u.posToVal(left, 'x');

          tip.replaceChildren(el('div', 'time', new Date(tSec * 1000).toLocaleTimeString([], { hour12: false })));
          list.forEach((cur, i) => {
            if (!u.series[i + 1].show) return;
            // A point within one and a half of the series' own steps (collection intervals differ).
            const n = cur.t.length;
            const step = n > 1 ? cur.t[n - 1] - cur.t[n - 2] : 0;
            const v = nearest(cur, tSec * 1000, Math.max(5000, 1.5 * step));
            const row = el('div', 'row');
            row.dataset.label = cur.meta.label;
            const sw = el('span', 'sw');
            sw.style.background = styleFor(cur.meta, i).stroke;
            row.append(sw, document.createTextNode(cur.meta.label + ': ' + fmtValue(cur.meta, v)));
            tip.append(row);
          });
          // At the top of the plot, beside the cursor (left of it near the right edge), so that
          // it hides neither the point read nor the legend.
          const r = u.over.getBoundingClientRect();
          tip.hidden = false;
          let x = r.left + left + 16;
          if (x + tip.offsetWidth > r.right) x = r.left + left - tip.offsetWidth - 16;
          tip.style.left = Math.max(0, x) + 'px';
          tip.style.top = Math.max(0, r.top + 4) + 'px';
        },
      },
    };
  }

  function drawnPlugin() {
    return {
      hooks: {
        drawSeries: (u, i) => {
          const s = u.series[i];
          const [i0, i1] = s.idxs || [0, -1];
          let n = 0;
          for (let k = i0; k <= i1; k++) if (u.data[i][k] != null) n++;
          state.drawn[s.label] = n;
        },
      },
    };
  }

  // The time axis in 24-hour time, as the tooltip (uPlot's stamp table, its default in 12-hour time).
  const timeAxis = {
    values: [
      [86400, '{YYYY}-{MM}-{DD}', null, null, null, null, null, null, 1],
      [3600, '{HH}:{mm}', '\n{YYYY}-{MM}-{DD}', null, '\n{MM}-{DD}', null, null, null, 1],
      [60, '{HH}:{mm}', '\n{YYYY}-{MM}-{DD}', null, '\n{MM}-{DD}', null, null, null, 1],
      [1, ':{ss}', '\n{YYYY}-{MM}-{DD} {HH}:{mm}', null, '\n{MM}-{DD} {HH}:{mm}', null, '\n{HH}:{mm}', null, 1],
    ],
  };

  function chartWidth(id) { return Math.max(400, document.getElementById(id).clientWidth); }

  // The right axis holds GPU memory activity and the ports' time above a share of line rate.
  function ratioAxisLabel(list) {
    const names = [];
    if (list.some(s => s.meta.axis === 'ratio' && s.meta.kind !== 'time_above')) names.push('GPU MEM BW active');
    if (list.some(s => s.meta.kind === 'time_above')) names.push('time at ≥ share of line rate');
    return names.join(' · ');
  }

  function buildMain(list) {
    if (state.chart) state.chart.destroy();
    const host = document.getElementById('chart');
    host.replaceChildren();
    state.drawn = {};
    const series = [{ label: 'time' }];
    list.forEach((cur, i) => {
      const st = styleFor(cur.meta, i);
      series.push({
        label: cur.meta.label, scale: cur.meta.axis === 'ratio' ? 'ratio' : 'bytes',
        stroke: st.stroke, dash: st.dash, width: st.width, spanGaps: true, points: { show: false },
        value: (u, v) => fmtValue(cur.meta, v),
      });
    });
    const opts = {
      width: chartWidth('chart'), height: 360,
      series,
      scales: { x: { time: true }, bytes: { range: (u, min, max) => [0, max > 0 ? max * 1.08 : 1] }, ratio: { range: [0, 1] } },
      axes: [
        timeAxis,
        { scale: 'bytes', size: 80, values: (u, vals) => vals.map(fmtBytesAxis) },
        { scale: 'ratio', side: 1, size: 60, grid: { show: false }, values: (u, vals) => vals.map(v => (v * 100).toFixed(0) + ' %'), label: ratioAxisLabel(list),
          show: list.some(s => s.meta.axis === 'ratio') },
      ],
      legend: { live: false },
      cursor: { drag: { x: false, y: false } },
      plugins: [tooltipPlugin(list), drawnPlugin()],
      hooks: { draw: [() => drawHistory()] },
    };
    state.chart = new window.uPlot(opts, tableOf(list, v => v), host);
  }

  function buildPorts(list, reported) {
    if (state.portChart) state.portChart.destroy();
    const host = document.getElementById('port-chart');
    host.replaceChildren();
    state.portChart = null;
    if (!list.length) {
      host.append(el('div', 'empty', reported ? 'no congestion counter moved in the window (CNPs, ECN marks, xmit_wait, PFC pauses all 0)' : 'no RDMA congestion counters from this node'));
      return;
    }
    const series = [{ label: 'time' }];
    list.forEach((cur, i) => {
      const st = styleFor(cur.meta, i);
      series.push({ label: cur.meta.label, scale: 'events', stroke: st.stroke, width: st.width, spanGaps: true, points: { show: false }, value: (u, v) => fmtCount(v) + '/s' });
    });
    state.portChart = new window.uPlot({
      width: chartWidth('port-chart'), height: 200, series,
      scales: { x: { time: true }, events: { distr: 3, log: 10 } },
      axes: [timeAxis, { scale: 'events', size: 80, values: (u, vals) => vals.map(fmtCountAxis) }],
      legend: { live: false },
    }, tableOf(list, v => (v > 0 ? v : null)), host);
  }

  function renderCharts() {
    const main = orderedSeries(m => m.axis === 'bytes' || m.axis === 'ratio');
    const ports = orderedSeries(m => m.axis === 'events');
    const key = main.map(s => s.meta.id).join(',');
    if (key !== state.chartKey || !state.chart) {
      state.chartKey = key;
      buildMain(main);
    } else {
      state.chart.setData(tableOf(main, v => v));
    }
    // A log scale has no zero: with no counter moving in the window, say so instead of an empty grid.
    const moving = ports.filter(s => s.v.some(v => v > 0));
    const pkey = moving.map(s => s.meta.id).join(',');
    if (pkey !== state.portKey) {
      state.portKey = pkey;
      buildPorts(moving, ports.length > 0);
    } else if (state.portChart) {
      state.portChart.setData(tableOf(moving, v => (v > 0 ? v : null)));
    }
  }

  // ---- verdict ----

  const verdicts = {
    healthy_gpudirect: ['Healthy GPUDirect RDMA', 'good', '#2e9e4f'],
    idle: ['Idle', 'idle', '#b0bec5'],
    tcp_fallback: ['NCCL fell back to TCP', 'bad', '#d62728'],
    gpudirect_bounce: ['GPUDirect RDMA bounces through host memory', 'bad', '#ff7f0e'],
    fabric_congestion: ['Fabric congestion', 'bad', '#9467bd'],
    pfc_storm: ['PFC pause storm', 'bad', '#8c564b'],
    link_degraded: ['Link trained down', 'warn', '#e2b93b'],
    gpudirect_not_ready: ['GPUDirect RDMA not ready', 'warn', '#bcbd22'],
    collective_slow: ['NCCL collective slow', 'bad', '#e7298a'],
    collective_stalled: ['NCCL communicator stalled', 'bad', '#67001f'],
    straggler: ['The straggler of its NCCL communicator', 'bad', '#a63603'],
    waits_on_peer: ['Waits on a faulty peer', 'warn', '#6baed6'],
  };
  function verdictInfo(v) { return verdicts[v] || [v, 'warn', '#7f7f7f']; }

  function chips(target, values, attr) {
    const box = document.getElementById(target);
    box.replaceChildren();
    const keys = Object.keys(values || {}).sort();
    if (!keys.length) { box.append(el('span', 'empty', 'none')); return; }
    for (const k of keys) {
      const c = el('span', 'chip');
      c.dataset[attr] = k;
      c.append(document.createTextNode(k + ' '), el('b', null, fmtNumber(values[k])));
      box.append(c);
    }
  }

  function renderVerdict() {
    const d = state.view.diagnosis;
    const box = document.getElementById('verdict');
    const name = document.getElementById('verdict-name');
    const sentence = document.getElementById('verdict-sentence');
    const devices = document.getElementById('verdict-devices');
    devices.replaceChildren();
    if (!d.present) {
      box.className = 'verdict none';
      box.dataset.verdict = '';
      name.textContent = 'No diagnosis in this pipeline';
      sentence.textContent = 'Route the diagnosis connector to this exporter to see verdicts; the ratios below are computed by the view from the drawn series.';
    } else {
      const [title, cls] = verdictInfo(d.verdict || 'idle');
      box.className = 'verdict ' + cls;
      box.dataset.verdict = d.verdict;
      const whose = d.owner ? ownerLabel(d.owner) + ': ' : '';
      name.textContent = whose + (d.verdict ? title + ' (' + d.verdict + ')' : 'No node-level verdict');
      const age = state.view.now - (d.at || state.view.now);
      sentence.textContent = (d.sentence || '') + (age > 30000 ? ' (last verdict ' + Math.round(age / 1000) + ' s ago)' : '');
      for (const dv of d.devices) {
        const [t] = verdictInfo(dv.verdict);
        const line = el('div', 'device-verdict');
        line.dataset.verdict = dv.verdict;
        // waits_on_peer names the peer node: its name opens the peer's page.
        const dev = dv.verdict === 'waits_on_peer' ? el('a', 'peer', dv.device) : document.createTextNode(dv.device);
        if (dv.verdict === 'waits_on_peer') dev.href = '#node=' + encodeURIComponent(dv.device);
        line.append(dev, document.createTextNode(': ' + t + ' (' + dv.verdict + ')' + (dv.sentence ? ' — ' + dv.sentence : '')));
        devices.append(line);
      }
    }
    chips('evidence', d.evidence, 'ratio');
    const o = state.view.observed;
    chips('observed', {
      mean_rdma_bytes_per_network_byte: o.mean_rdma_bytes_per_network_byte,
      mean_cpu_pcie_bytes_per_network_byte: o.mean_cpu_pcie_bytes_per_network_byte,
      mean_host_memory_bytes_per_network_byte: o.mean_host_memory_bytes_per_network_byte,
      mean_rdma_transmit_bytes_per_line_byte: o.mean_rdma_transmit_bytes_per_line_byte,
    }, 'ratio');
  }

  function drawHistory() {
    const strip = document.getElementById('history');
    const legend = document.getElementById('history-legend');
    strip.replaceChildren();
    legend.replaceChildren();
    const u = state.chart;
    if (!u || !state.view) return;
    const spans = state.view.diagnosis.history;
    if (!spans.length) { legend.append(el('span', null, 'no verdict history')); return; }
    const over = u.over.getBoundingClientRect(), box = strip.getBoundingClientRect();
    const off = over.left - box.left;
    const used = new Set();
    for (const s of spans) {
      const x0 = Math.max(0, u.valToPos(s.from / 1000, 'x')), x1 = Math.min(over.width, u.valToPos(Math.max(s.to, s.from + 1000) / 1000, 'x'));
      if (x1 <= 0 || x0 >= over.width) continue;
      const [title, , colour] = verdictInfo(s.verdict);
      const d = el('div', 'span');
      d.style.left = (off + x0) + 'px';
      d.style.width = Math.max(1, x1 - x0) + 'px';
      d.style.background = colour;
      d.title = title + ' ' + new Date(s.from).toLocaleTimeString([], { hour12: false }) + '–' + new Date(s.to).toLocaleTimeString([], { hour12: false });
      d.dataset.verdict = s.verdict;
      strip.append(d);
      used.add(s.verdict);
    }
    for (const v of used) {
      const [title, , colour] = verdictInfo(v);
      const k = el('span', 'key');
      k.style.background = colour;
      legend.append(k, document.createTextNode(title));
    }
  }

  // ---- tables ----

  const portStates = { 1: 'DOWN', 2: 'INIT', 3: 'ARMED', 4: 'ACTIVE', 5: 'ACTIVE_DEFER' };

  function cell(text, cls) { return el('td', cls || null, text); }

  // timeAboveCell: the share of time the port transmitted at or above each share of its line
  // rate ("≥90 %: 6.7 %"), highest share first; '–' without the fast sampler.
  function timeAboveCell(m) {
    const shares = Object.keys(m || {}).sort((a, b) => Number(b) - Number(a));
    if (!shares.length) return cell('–');
    const c = cell(shares.map(s => '≥' + Number((Number(s) * 100).toPrecision(3)) + ' %: ' + fmtPercent(m[s])).join(' · '));
    c.className = 'time-above';
    return c;
  }

  function renderPorts() {
    const body = document.querySelector('#ports tbody');
    body.replaceChildren();
    const ports = state.view.ports;
    if (!ports.length) { const tr = el('tr'); const td = cell('no RDMA ports reported', 'empty'); td.colSpan = 13; tr.append(td); body.append(tr); return; }
    for (const p of ports) {
      const tr = el('tr');
      tr.dataset.device = p.device;
      const c = p.counters_per_second || {};
      const link = p.rate_bytes_per_second > 0 ? (p.rate_bytes_per_second * 8 / 1e9).toFixed(0) + ' Gb/s' + (p.width > 0 ? ' ' + p.width + 'X' : '') : '–';
      tr.append(
        cell(p.device),
        cell(portStates[p.state] || (p.state < 0 ? '–' : String(p.state)), p.state === 4 ? 'good' : (p.state > 0 ? 'bad' : null)),
        cell(link),
        cell(fmtBytes(p.transmit_bytes_per_second)),
        cell(p.rate_bytes_per_second > 0 ? fmtPercent(p.transmit_line_share) : '–'),
        cell(p.peak_window ? fmtBytes(p.transmit_peak_bytes_per_second) + ' / ' + p.peak_window : '–'),
        timeAboveCell(p.transmit_time_above),
        cell(fmtCount(c.np_cnp_sent)), cell(fmtCount(c.rp_cnp_handled)), cell(fmtCount(c.ecn_marked)),
        (p.saturated || []).includes('port_xmit_wait') ? cell('saturated', 'bad') : cell(fmtCount(c.xmit_wait)),
        cell(fmtCount(c.pfc_pause_receive)), cell(fmtCount(c.pfc_pause_transmit)),
      );
      body.append(tr);
    }
  }

  function tri(v, bad) {
    if (v < 0) return cell('unknown');
    return cell(v ? 'yes' : 'no', (v === 1) === bad ? 'bad' : 'good');
  }

  // The PCIe distance the rnic receiver reports: 1 PIX, 2 PXB (what NCCL uses for GPUDirect RDMA
  // by default), 3 PHB and farther; an unknown path (a NUMA node of -1) is neither good nor bad.
  function pathClass(p) {
    if (!p.path || p.path === 'unknown') return null;
    return p.distance >= 3 ? 'bad' : 'good';
  }

  // GPUDirect readiness is tri-state: never "yes" when the receiver could not know; the reason
  // (e.g. acs_unknown, acs_redirect, path_unknown) says why it is not "yes".
  function readyCell(p) {
    const c = tri(p.ready, false);
    if (p.ready !== 1 && p.ready_reason) {
      c.textContent += ' (' + p.ready_reason.replaceAll('_', ' ') + ')';
      c.title = p.ready_reason;
    }
    return c;
  }

  // A GPU is its PCI address (the rnic receiver's gpu.pci.bus_id), shown with the gpu receiver's
  // name for it (gpu.info) where that receiver reports the GPU: "gpu0 (0000:1a:00.0)".
  function gpuCell(p) {
    const c = cell(p.gpu_device ? p.gpu_device + ' (' + p.gpu + ')' : p.gpu);
    c.title = 'PCI ' + p.gpu;
    return c;
  }

  function renderTopology() {
    const t = state.view.topology;
    const pm = document.getElementById('peermem');
    pm.replaceChildren(el('span', 'chips-title', 'peer memory'));
    const mech = Object.keys(t.peer_memory).sort();
    if (!mech.length) pm.append(el('span', 'empty', 'not reported'));
    for (const m of mech) {
      const v = t.peer_memory[m];
      const c = el('span', 'chip', m + ' ' + (v < 0 ? 'unknown' : v ? 'yes' : 'no'));
      c.dataset.mechanism = m;
      pm.append(c);
    }
    const body = document.querySelector('#topology tbody');
    body.replaceChildren();
    if (!t.pairs.length) { const tr = el('tr'); const td = cell('no GPU-NIC pairs reported', 'empty'); td.colSpan = 10; tr.append(td); body.append(tr); return; }
    for (const p of t.pairs) {
      const tr = el('tr');
      tr.dataset.gpu = p.gpu;
      tr.dataset.nic = p.nic;
      tr.append(
        gpuCell(p), cell(p.nic), cell(p.path || '–', pathClass(p)), cell(p.nearest ? 'yes' : ''),
        readyCell(p), tri(p.acs_redirect, true),
        cell(p.gpu_iommu || '–'), cell(p.nic_iommu || '–'), tri(p.gpu_link_degraded, true), tri(p.nic_link_degraded, true),
      );
      body.append(tr);
    }
  }

  // ---- owners ----

  // ownerLabel is an owner's name in words ("job 4711"), from the node's list of its owners.
  function ownerLabel(id) {
    const o = (state.view && state.view.owners || []).find(o => o.id === id);
    return o ? o.label : id.replace(':', ' ');
  }

  // renderOwners fills the owner selector with the node's pods and jobs: hidden on a node that
  // reports none, and kept on an owner the address asks for even after it left the node.
  function renderOwners() {
    const owners = state.view.owners || [];
    const picker = document.getElementById('owner-picker');
    picker.hidden = !owners.length && !state.owner;
    const sel = document.getElementById('owner');
    const want = [['', 'whole node'], ...owners.map(o => [o.id, o.label + ' (' + o.devices.length + ' devices)'])];
    if (state.owner && !owners.some(o => o.id === state.owner)) want.push([state.owner, ownerLabel(state.owner) + ' (not on this node)']);
    if (sel.options.length !== want.length || want.some(([id, label], i) => sel.options[i].value !== id || sel.options[i].textContent !== label)) {
      sel.replaceChildren(...want.map(([id, label]) => { const o = el('option', null, label); o.value = id; return o; }));
    }
    sel.value = state.owner;
  }

  // address is the page's location hash: the node and, when narrowed, the owner.
  function address() {
    const p = new URLSearchParams();
    if (state.node != null) p.set('node', state.node);
    if (state.owner) p.set('owner', state.owner);
    return p.toString();
  }

  function wantedOwner() { return new URLSearchParams(location.hash.slice(1)).get('owner') || ''; }

  // ---- loop ----

  async function refreshNodes() {
    const nodes = await getJSON('api/nodes');
    const sel = document.getElementById('node');
    const names = nodes.map(n => n.name);
    if (sel.options.length !== names.length || names.some((n, i) => sel.options[i].value !== n)) {
      sel.replaceChildren(...names.map(n => { const o = el('option', null, n); o.value = n; return o; }));
    }
    const wanted = new URLSearchParams(location.hash.slice(1)).get('node');
    const pick = names.includes(wanted) ? wanted : (names.includes(state.node) ? state.node : names[0]);
    if (pick !== state.node) selectNode(pick, pick === wanted ? wantedOwner() : '');
    if (pick != null) sel.value = pick;
    return nodes.length;
  }

  function selectNode(name, owner) {
    state.node = name;
    state.owner = owner || '';
    state.series.clear();
    state.chartKey = ''; state.portKey = null;
    state.view = null;
  }

  async function tick() {
    try {
      const count = await refreshNodes();
      if (state.node == null) {
        document.getElementById('status').textContent = 'waiting for metrics…';
        return;
      }
      let since = 0;
      if (state.view) since = Math.max(0, state.view.now - Math.max(15000, 5 * state.refreshMs));
      const view = await getJSON('api/node?name=' + encodeURIComponent(state.node) + '&since=' + since +
        (state.owner ? '&owner=' + encodeURIComponent(state.owner) : ''));
      if (view.node !== state.node || (view.owner || '') !== state.owner) return;
      state.windowMs = view.window_ms;
      state.refreshMs = view.refresh_ms;
      merge(view);
      state.view = view;
      renderOwners();
      renderCharts();
      renderVerdict();
      drawHistory();
      renderPorts();
      renderTopology();
      state.updates++;
      document.title = 'InterconnectLens · ' + state.node + (state.owner ? ' · ' + ownerLabel(state.owner) : '');
      document.getElementById('status').textContent = 'updated ' + new Date(view.now).toLocaleTimeString([], { hour12: false }) +
        ' · ' + count + (count === 1 ? ' node' : ' nodes') + ' · last ' + Math.round(view.window_ms / 60000) + ' min';
    } catch (e) {
      state.errors++;
      if (e.status === 400 && state.owner) {
        // An owner the API cannot read (an address edited by hand): the whole node instead.
        document.getElementById('status').textContent = 'no such owner: ' + state.owner + '; showing the whole node';
        selectNode(state.node, '');
        history.replaceState(null, '', '#' + address());
      } else {
        document.getElementById('status').textContent = 'collector unreachable (' + e.message + ')';
      }
    } finally {
      setTimeout(tick, state.refreshMs);
    }
  }

  document.getElementById('node').addEventListener('change', e => {
    selectNode(e.target.value, '');
    location.hash = address();
  });
  document.getElementById('owner').addEventListener('change', e => {
    selectNode(state.node, e.target.value);
    location.hash = address();
  });
  window.addEventListener('hashchange', () => {
    const wanted = new URLSearchParams(location.hash.slice(1)).get('node');
    if (wanted && (wanted !== state.node || wantedOwner() !== state.owner)) selectNode(wanted, wantedOwner());
  });
  // The Capture button (lensview capture: set): the capture extension writes the rings the
  // receivers keep as recordings; the answer names the files, or why there are none.
  async function setUpCapture() {
    try {
      if (!(await getJSON('api/capture')).enabled) return;
    } catch (e) { return; }
    const button = document.getElementById('capture');
    const out = document.getElementById('capture-result');
    button.hidden = false;
    button.addEventListener('click', async () => {
      button.disabled = true;
      out.textContent = 'capturing…';
      try {
        const r = await fetch('api/capture', { method: 'POST', cache: 'no-store', headers: { 'X-Iclens-Capture': '1' } });
        const body = await r.json();
        if (body.error) {
          out.textContent = 'not captured: ' + body.error;
        } else if (!body.written.length) {
          out.textContent = 'nothing to capture: no receiver keeps a ring (bursts.capture)';
        } else {
          out.textContent = 'captured: ' + body.written.map(w => w.path || (w.source + ': ' + w.error)).join(', ');
        }
      } catch (e) {
        out.textContent = 'not captured: ' + e.message;
      } finally {
        button.disabled = false;
      }
    });
  }
  setUpCapture();
  window.addEventListener('resize', () => {
    if (state.chart) state.chart.setSize({ width: chartWidth('chart'), height: 360 });
    if (state.portChart) state.portChart.setSize({ width: chartWidth('port-chart'), height: 200 });
  });
  tick();
})();
