// The cluster page: every node the view knows, one row each, coloured by the node's verdict over
// the window (/api/cluster), grouped by the job that owns its devices where the nodes send the
// owner receiver's interconnect.owner. A cell opens the node's page (index.html#node=<name>).
'use strict';
(() => {
  const state = { view: null };
  window.lensCluster = state;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function clock(ms) { return new Date(ms).toLocaleTimeString('en-GB', { hour12: false }); }
  function nodeHref(name) { return './#node=' + encodeURIComponent(name); }

  function row(n, from, span) {
    const r = el('div', 'cluster-row');
    r.dataset.node = n.name;
    if (n.verdict) r.dataset.verdict = n.verdict;
    const name = el('a', 'node-name', n.name);
    name.href = nodeHref(n.name);
    name.title = n.name + (n.verdict ? ': ' + n.verdict : ': no verdict');
    const track = el('div', 'track');
    for (const c of n.cells) {
      if (c.to < from) continue; // before the span shown
      const a = el('a', 'cell');
      a.href = nodeHref(n.name);
      a.dataset.node = n.name;
      a.dataset.verdict = c.verdict;
      a.dataset.from = c.from;
      a.dataset.to = c.to;
      a.title = n.name + ': ' + c.verdict + ' ' + clock(c.from) + '–' + clock(c.to);
      a.style.left = (100 * Math.max(0, c.from - from) / span) + '%';
      a.style.width = (100 * Math.max(0, c.to - Math.max(c.from, from)) / span) + '%';
      track.append(a);
    }
    // The peers the node waits on (waits_on_peer): their names open their pages.
    const waits = el('span', 'waits');
    for (const p of n.waits_on || []) {
      const a = el('a', 'peer', '⇠ ' + p);
      a.href = nodeHref(p);
      a.title = n.name + ' waits on ' + p + ' (waits_on_peer)';
      waits.append(a);
    }
    if (n.waits_on) r.dataset.waitsOn = n.waits_on.join(' ');
    r.append(name, waits, track);
    return r;
  }

  // The span shown: the selector's, never more than the view keeps.
  function shownSpan(v) {
    const chosen = Number(document.getElementById('span').value) || v.window_ms;
    return Math.max(1, Math.min(chosen, v.window_ms));
  }

  function draw(v) {
    const span = shownSpan(v), from = v.now - span;
    const box = document.getElementById('cluster');
    const groups = [];
    const seen = new Set();
    let nodes = 0;
    for (const g of v.groups) {
      const sec = el('section', 'cluster-group');
      sec.dataset.group = g.name;
      if (v.grouped) sec.append(el('h3', null, (g.name || 'no job') + ' (' + g.nodes.length + ')'));
      for (const n of g.nodes) {
        sec.append(row(n, from, span));
        for (const c of n.cells) if (c.to >= from) seen.add(c.verdict);
        nodes++;
      }
      groups.push(sec);
    }
    box.replaceChildren(...groups);
    document.getElementById('grouping').textContent = v.grouped
      ? 'Grouped by the job (Slurm job id, or the pod\'s namespace) that owns most of each node\'s devices, from the owner receiver.'
      : 'Ungrouped: no node sent interconnect.owner (add the owner receiver to the nodes\' pipelines to group them by job).';
    const axis = document.getElementById('axis');
    axis.replaceChildren(el('span', null, clock(from)), el('span', null, clock(v.now)));
    const legend = document.getElementById('cluster-legend');
    legend.replaceChildren();
    for (const name of [...seen].sort()) {
      const k = el('span', 'key');
      k.dataset.verdict = name;
      legend.append(k, el('span', null, name));
    }
    document.getElementById('status').textContent = nodes + ' nodes, updated ' + clock(v.now);
  }

  async function refresh() {
    try {
      const r = await fetch('api/cluster', { cache: 'no-store' });
      if (!r.ok) throw new Error(r.status + ' ' + r.statusText);
      state.view = await r.json();
      draw(state.view);
    } catch (e) {
      document.getElementById('status').textContent = 'cannot read the view: ' + e.message;
    }
    // Verdicts change once per evaluation (10 s by default), and the whole cluster is redrawn on
    // each poll (2 s for 2048 nodes on a loaded machine): at most every 5 s, unlike the node page.
    setTimeout(refresh, Math.max(5000, (state.view && state.view.refresh_ms) || 5000));
  }
  document.getElementById('span').addEventListener('change', () => { if (state.view) draw(state.view); });
  refresh();
})();
