// The conformance report's behaviour: selecting an entry (a square of the
// matrix, a row of the table of failures, a run of the race windows) fills the detail panel and
// draws that run's timeline. The data is the JSON block the writer embeds
// (html_report_data.h). Every text from the report enters the page through
// textContent or an attribute value, never as markup.
(function () {
  'use strict';

  const SVG_NS = 'http://www.w3.org/2000/svg';
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const detail = document.getElementById('detail');
  const squares = Array.from(document.querySelectorAll('svg.matrix .sq'));
  const tableButtons = Array.from(document.querySelectorAll('.failures [data-entry]'));
  const windowButtons = Array.from(document.querySelectorAll('.windows [data-entry]'));
  let current = -1;

  // An HTML element with attributes and children (strings become text).
  function h(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
    for (const child of [].concat(children || [])) {
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  }

  // The same for SVG.
  function s(tag, attrs, children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    for (const child of [].concat(children || [])) node.appendChild(child);
    return node;
  }

  const spaced = (name) => String(name).replace(/_/g, ' ');

  // ---- Timeline ----------------------------------------------------------

  // A mark's shape at (x, y): each kind its own, so that they are told
  // apart without colour as well.
  function shape(kind, x, y) {
    switch (kind) {
      case 'call':
        return s('rect', { class: 'shape', x: x - 1.25, y: y - 7, width: 2.5, height: 14 });
      case 'completion':
        return s('circle', { class: 'shape', cx: x, cy: y, r: 4.5 });
      case 'error_completion':
        return s('path', { class: 'shape', d: `M${x - 4} ${y - 4}L${x + 4} ${y + 4}M${x + 4} ${y - 4}L${x - 4} ${y + 4}` });
      case 'event':
        return s('path', { class: 'shape', d: `M${x} ${y - 6}L${x + 6} ${y}L${x} ${y + 6}L${x - 6} ${y}Z` });
      case 'fault':
        return s('path', { class: 'shape', d: `M${x - 6.5} ${y - 6}L${x + 6.5} ${y - 6}L${x} ${y + 7}Z` });
      default:  // finding
        return s('rect', { class: 'shape', x: x - 5, y: y - 5, width: 10, height: 10, rx: 1.5 });
    }
  }

  function timelineLegend() {
    return h('ul', { class: 'tl-legend', 'aria-label': 'Timeline legend' },
      data.mark_kinds.map((kind) => h('li', {}, [
        s('svg', { width: 16, height: 16, 'aria-hidden': 'true' }, [s('g', { class: 'mark mk-' + kind }, [shape(kind, 8, 8)])]),
        spaced(kind),
      ])));
  }

  // A step of 1, 2 or 5 times a power of ten that gives about `count` ticks.
  function tickStep(span, count) {
    const raw = Math.max(span / Math.max(count, 1), 1);
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const factor of [1, 2, 5, 10]) if (factor * power >= raw) return factor * power;
    return 10 * power;
  }

  // One row per object, x = the trace record's index.
  function timeline(entry, width) {
    const rows = entry.timeline.rows;
    const marks = entry.timeline.marks;
    if (marks.length === 0) return h('p', { class: 'empty' }, 'The run left no mark to draw.');
    let lo = Infinity;
    let hi = -Infinity;
    for (const mark of marks) { lo = Math.min(lo, mark[0]); hi = Math.max(hi, mark[0]); }
    if (hi === lo) hi = lo + 1;
    const labelWidth = 14 + 7.2 * Math.max(...rows.map((row) => row.length), 4);
    const rowHeight = 24;
    const top = 24;
    const pad = 12;
    // Dense runs scroll sideways rather than pile marks on one pixel.
    const plotWidth = Math.max(width - labelWidth - 2 * pad, (hi - lo) * 3, 120);
    const svgWidth = labelWidth + plotWidth + 2 * pad;
    const svgHeight = top + rows.length * rowHeight + 6;
    const x = (record) => labelWidth + pad + ((record - lo) / (hi - lo)) * plotWidth;
    const y = (row) => top + row * rowHeight + rowHeight / 2;

    const svg = s('svg', {
      class: 'tl', width: svgWidth, height: svgHeight, viewBox: `0 0 ${svgWidth} ${svgHeight}`,
      role: 'img', 'aria-label': `Timeline of ${entry.fault_class} seed ${entry.seed}: ${marks.length} marks over trace records ${lo} to ${hi}`,
    });
    rows.forEach((name, row) => {
      if (row % 2 === 0) svg.appendChild(s('rect', { class: 'band', x: 0, y: top + row * rowHeight, width: svgWidth, height: rowHeight }));
      const label = s('text', { class: 'row-name', x: 8, y: y(row) + 4 });
      label.textContent = name;
      svg.appendChild(label);
    });
    svg.appendChild(s('line', { class: 'axis', x1: labelWidth, y1: top, x2: svgWidth, y2: top }));
    const step = tickStep(hi - lo, plotWidth / 90);
    for (let t = Math.ceil(lo / step) * step; t <= hi; t += step) {
      svg.appendChild(s('line', { class: 'axis', x1: x(t), y1: top - 4, x2: x(t), y2: top }));
      const tick = s('text', { class: 'tick', x: x(t), y: top - 8 });
      tick.textContent = String(t);
      svg.appendChild(tick);
    }
    const axisName = s('text', { class: 'tick', x: labelWidth / 2, y: top - 8 });
    axisName.textContent = 'record';
    svg.appendChild(axisName);
    // Where a fault fired or a check reported: a line through every row,
    // so that what it did to the other objects lines up under it.
    for (const [record, , kind] of marks) {
      const name = data.mark_kinds[kind];
      if (name !== 'fault' && name !== 'finding') continue;
      svg.appendChild(s('line', { class: 'guide mk-' + name, x1: x(record), y1: top, x2: x(record), y2: svgHeight }));
    }
    for (const [record, row, kind, label] of marks) {
      const name = data.mark_kinds[kind];
      const title = s('title');
      title.textContent = `${label} (${spaced(name)}, ${rows[row]}, record ${record})`;
      svg.appendChild(s('g', { class: 'mark mk-' + name }, [title, shape(name, x(record), y(row))]));
    }
    return svg;
  }

  // ---- Detail panel ------------------------------------------------------

  function copyButton(text, source) {
    const button = h('button', { type: 'button', class: 'copy', 'aria-label': 'Copy the replay line' }, 'Copy');
    const said = (word) => {
      button.textContent = word;
      setTimeout(() => { button.textContent = 'Copy'; }, 1500);
    };
    // The clipboard API needs a focused page and permission; the selection
    // and execCommand work where it does not (a file:// page, an old browser).
    const fallback = () => {
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      let copied = false;
      try { copied = document.execCommand('copy'); } catch (error) { copied = false; }
      said(copied ? 'Copied' : 'Selected: press Ctrl+C');
    };
    button.addEventListener('click', () => {
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(() => said('Copied'), fallback);
      } else {
        fallback();
      }
    });
    return button;
  }

  function facts(entry) {
    const item = (name, value, wide) => h('div', wide ? { class: 'wide' } : {}, [h('dt', {}, name), h('dd', {}, value)]);
    const trace = `${entry.trace_records} records` + (entry.trace_hash ? `, hash ${entry.trace_hash}` : '');
    return h('dl', { class: 'facts' }, [
      item('Expectation', spaced(entry.expect)),
      item('Outcome', spaced(entry.outcome)),
      item('Exit status', String(entry.exit_status) + (entry.exit_status > 128 ? ` (signal ${entry.exit_status - 128})` : '')),
      item('Duration', `${entry.duration_seconds.toFixed(2)} s`),
      item('Checks that reported', entry.checks.length ? h('code', {}, entry.checks.join(', ')) : 'none', true),
      item('Race windows reached', entry.windows.length ? h('code', {}, entry.windows.join(', ')) : 'none', true),
      item('The program said last', entry.said ? h('code', { class: 'said' }, entry.said) : h('span', { class: 'muted' }, 'nothing'), true),
      item('Trace', trace, true),
    ]);
  }

  function faultTable(entry) {
    if (entry.faults.length === 0) return h('p', { class: 'empty' }, entry.plan.length ? 'No fault fired.' : 'No fault planned.');
    return h('table', { class: 'faults' }, [
      h('thead', {}, h('tr', {}, ['Kind', 'Rule', 'Object', 'Nth', 'Level', 'Record'].map((name) => h('th', {}, name)))),
      h('tbody', {}, entry.faults.map((fault) => h('tr', {}, [
        h('td', {}, h('code', {}, fault.kind)),
        h('td', {}, String(fault.rule)),
        h('td', {}, h('code', {}, fault.object)),
        h('td', {}, String(fault.nth)),
        h('td', { class: 'level-' + fault.level }, fault.level),
        h('td', {}, String(fault.record)),
      ]))),
    ]);
  }

  function excerpt(entry) {
    if (entry.excerpt.length === 0) return h('p', { class: 'empty' }, 'No excerpt.');
    const hits = new Set(entry.faults.map((fault) => fault.record));
    const pre = h('pre', { class: 'excerpt' });
    let previous = null;
    for (const [index, json] of entry.excerpt) {
      if (previous !== null && index > previous + 1) pre.appendChild(h('span', { class: 'gap' }, '\u22ee'));
      pre.appendChild(h('span', { class: hits.has(index) ? 'line hit' : 'line' }, [h('span', { class: 'idx' }, String(index)), json]));
      previous = index;
    }
    return pre;
  }

  function render(index) {
    const entry = data.entries[index];
    const replayCode = h('code', { class: 'replay-line' }, entry.replay);
    const timelineBox = h('div', { class: 'timeline' });
    detail.replaceChildren(
      h('div', { class: 'detail-head' }, [
        h('div', {}, [
          h('p', { class: 'eyebrow' }, `Entry ${index + 1} of ${data.entries.length}`),
          h('h2', {}, [entry.fault_class, ' ', h('span', { class: 'seed' }, `seed ${entry.seed}`)]),
        ]),
        h('span', { class: 'badge v-' + entry.verdict }, spaced(entry.verdict)),
      ]),
      h('p', { class: 'reason' }, entry.reason),
      h('div', { class: 'replay' }, [
        h('div', { class: 'replay-row' }, [replayCode, copyButton(entry.replay, replayCode)]),
        entry.replay_file ? h('div', { class: 'replay-file' }, ['replay file: ', h('code', {}, entry.replay_file)]) : null,
      ]),
      h('h3', {}, 'Timeline'),
      timelineBox,
      timelineLegend(),
      h('h3', {}, 'Run'),
      facts(entry),
      h('h3', {}, 'Plan'),
      entry.plan.length ? h('ol', { class: 'plan' }, entry.plan.map((rule) => h('li', {}, h('code', {}, rule)))) : h('p', { class: 'empty' }, 'No fault: the plain run.'),
      h('h3', {}, 'Fired faults'),
      faultTable(entry),
      h('h3', {}, 'Trace excerpt'),
      excerpt(entry),
    );
    // Drawn once the box is in the page, at the width it got.
    timelineBox.appendChild(timeline(entry, timelineBox.clientWidth || 480));
    detail.scrollTop = 0;
  }

  // ---- Selection ---------------------------------------------------------

  function select(index) {
    current = index;
    for (const square of squares) {
      const on = Number(square.dataset.entry) === index;
      square.classList.toggle('selected', on);
      square.setAttribute('aria-pressed', on ? 'true' : 'false');
    }
    for (const button of tableButtons) {
      button.closest('tr').classList.toggle('selected', Number(button.dataset.entry) === index);
    }
    for (const button of windowButtons) {
      button.classList.toggle('selected', Number(button.dataset.entry) === index);
    }
    render(index);
  }

  // One tab stop in the matrix (roving tabindex); arrows move it.
  function focusSquare(position) {
    const target = squares[position];
    if (!target) return;
    for (const square of squares) square.setAttribute('tabindex', square === target ? '0' : '-1');
    target.focus();
  }

  // The square in the next or previous class row nearest to this one's x.
  function verticalNeighbour(position, direction) {
    const here = squares[position];
    const row = Number(here.dataset.row) + direction;
    const x = Number(here.getAttribute('x'));
    let best = -1;
    squares.forEach((square, k) => {
      if (Number(square.dataset.row) !== row) return;
      if (best < 0 || Math.abs(Number(square.getAttribute('x')) - x) < Math.abs(Number(squares[best].getAttribute('x')) - x)) best = k;
    });
    return best;
  }

  squares.forEach((square, position) => {
    square.addEventListener('click', () => {
      focusSquare(position);
      select(Number(square.dataset.entry));
    });
    square.addEventListener('keydown', (event) => {
      let next = -1;
      switch (event.key) {
        case 'Enter':
        case ' ':
          event.preventDefault();
          select(Number(square.dataset.entry));
          return;
        case 'ArrowRight': next = position + 1; break;
        case 'ArrowLeft': next = position - 1; break;
        case 'ArrowDown': next = verticalNeighbour(position, 1); break;
        case 'ArrowUp': next = verticalNeighbour(position, -1); break;
        case 'Home': next = 0; break;
        case 'End': next = squares.length - 1; break;
        default: return;
      }
      event.preventDefault();
      if (next >= 0 && next < squares.length) focusSquare(next);
    });
  });
  for (const button of tableButtons.concat(windowButtons)) {
    button.addEventListener('click', () => select(Number(button.dataset.entry)));
  }

  let resizeTimer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { if (current >= 0) render(current); }, 150);
  });

  // The first entry that does not conform is shown from the start: it is
  // what a reader opens the report for.
  if (data.entries.length > 0) {
    const failing = data.entries.findIndex((entry) => entry.verdict === 'does_not_conform');
    select(failing >= 0 ? failing : 0);
  }
})();
