// wload's report and dashboard: draws the model of src/model.rs (embedded
// in the page as JSON) with uPlot. The dashboard is the same page with an
// empty model, filled by the server-sent events of /events: `model`
// (everything so far), then one `frame` per output interval, then `end`.
// Every figure shown carries its raw value in data-value, so that what the
// page shows can be compared with the summary export.
(function () {
  'use strict';

  var COLORS = ['#2563eb', '#16a34a', '#dc2626', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];
  var app = document.getElementById('app');
  var model = JSON.parse(document.getElementById('wload-model').textContent);
  var charts = {};
  window.wloadCharts = charts;

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function isNum(v) { return typeof v === 'number' && isFinite(v); }
  function count(v) { return isNum(v) ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : '–'; }
  function ms(v) { return isNum(v) ? v.toFixed(2) + ' ms' : '–'; }
  function pct(v) { return isNum(v) ? (v * 100).toFixed(2) + '%' : '–'; }
  function perSec(v) { return isNum(v) ? v.toFixed(2) + '/s' : '–'; }
  function bytes(v) {
    if (!isNum(v)) return '–';
    var units = ['B', 'kB', 'MB', 'GB', 'TB'];
    var i = 0;
    while (Math.abs(v) >= 1000 && i < units.length - 1) { v /= 1000; i++; }
    return (i === 0 ? String(v) : v.toFixed(2)) + ' ' + units[i];
  }
  function secs(v) { return isNum(v) ? v.toFixed(1) + ' s' : '–'; }

  // A figure of the summary: metric and field name it, data-value holds
  // the exported number itself.
  function fig(metric, field, text, value) {
    return '<span class="num" data-metric="' + esc(metric) + '" data-field="' + esc(field) +
      '" data-value="' + esc(value) + '">' + esc(text) + '</span>';
  }
  function metric(name) { return ((model.summary || {}).metrics || {})[name]; }
  function kindOf(name) { return (model.metrics_kinds || {})[name]; }

  function isTime(name) {
    return /duration|_blocked|_connecting|_tls_handshaking|_sending|_waiting|_receiving/.test(name);
  }
  function fieldText(name, field, v) {
    if (field === 'rate' && name !== 'http_req_failed' && name !== 'checks') return perSec(v);
    if (field === 'value' && (kindOf(name) === 'rate' || name === 'http_req_failed' || name === 'checks')) return pct(v);
    if (name.indexOf('data_') === 0 && field === 'count') return bytes(v);
    if (isTime(name) && field !== 'count') return ms(v);
    return count(v);
  }

  function card(title, body) {
    return '<div class="card"><div class="card-title">' + esc(title) + '</div><div class="card-body">' + body + '</div></div>';
  }

  function overview() {
    var cards = [];
    var reqs = metric('http_reqs');
    if (reqs) cards.push(card('HTTP requests', fig('http_reqs', 'count', count(reqs.count), reqs.count) +
      '<small>' + fig('http_reqs', 'rate', perSec(reqs.rate), reqs.rate) + '</small>'));
    var failed = metric('http_req_failed');
    if (failed) cards.push(card('Failed requests', fig('http_req_failed', 'value', pct(failed.value), failed.value) +
      '<small>' + fig('http_req_failed', 'passes', count(failed.passes), failed.passes) + ' failed</small>'));
    var dur = metric('http_req_duration');
    if (dur) {
      var p95 = dur['p(95)'] !== undefined ? 'p(95)' : null;
      var body = fig('http_req_duration', 'avg', ms(dur.avg), dur.avg) + '<small>avg';
      if (p95) body += ' · p(95) ' + fig('http_req_duration', p95, ms(dur[p95]), dur[p95]);
      cards.push(card('Request duration', body + '</small>'));
    }
    var it = metric('iterations');
    if (it) cards.push(card('Iterations', fig('iterations', 'count', count(it.count), it.count) +
      '<small>' + fig('iterations', 'rate', perSec(it.rate), it.rate) + '</small>'));
    var vus = metric('vus_max') || metric('vus');
    if (vus) cards.push(card('VUs', fig(metric('vus_max') ? 'vus_max' : 'vus', 'max', count(vus.max), vus.max) + '<small>max</small>'));
    var checks = metric('checks');
    if (checks) cards.push(card('Checks', fig('checks', 'value', pct(checks.value), checks.value) +
      '<small>' + fig('checks', 'passes', count(checks.passes), checks.passes) + ' passed, ' +
      fig('checks', 'fails', count(checks.fails), checks.fails) + ' failed</small>'));
    var rx = metric('data_received');
    if (rx) cards.push(card('Data received', fig('data_received', 'count', bytes(rx.count), rx.count)));
    if (!cards.length) return '<p class="empty">No samples yet.</p>';
    return '<div class="cards">' + cards.join('') + '</div>';
  }

  function table(head, rows, empty) {
    if (!rows.length) return '<p class="empty">' + esc(empty) + '</p>';
    return '<table><thead><tr>' + head.map(function (h) { return '<th>' + esc(h) + '</th>'; }).join('') +
      '</tr></thead><tbody>' + rows.join('') + '</tbody></table>';
  }

  function thresholds() {
    var rows = (model.thresholds || []).map(function (t) {
      var state = t.ok ? '<span class="ok">✓ pass</span>' : '<span class="bad">✗ fail</span>';
      if (model.live && t.observed === null) state = '<span class="wait">no value yet</span>';
      return '<tr data-threshold="' + esc(t.key + ' ' + t.source) + '" data-ok="' + t.ok + '"><td>' + esc(t.key) +
        '</td><td><code>' + esc(t.source) + '</code></td><td>' + esc(t.observed === null || t.observed === undefined ? '–' : fieldText(t.key, 'x', t.observed)) +
        '</td><td>' + state + (t.note ? ' <small>' + esc(t.note) + '</small>' : '') + '</td></tr>';
    });
    return table(['metric', 'threshold', 'value', 'state'], rows, 'No thresholds.');
  }

  function checks() {
    var rows = [];
    (function walk(g) {
      (g.checks || []).forEach(function (c) {
        var total = c.passes + c.fails;
        rows.push('<tr data-check="' + esc(c.path) + '"><td>' + esc(g.path || '–') + '</td><td>' + esc(c.name) +
          '</td><td class="n" data-field="passes">' + count(c.passes) + '</td><td class="n" data-field="fails">' + count(c.fails) +
          '</td><td class="n">' + pct(total ? c.passes / total : 0) + '</td></tr>');
      });
      (g.groups || []).forEach(walk);
    })((model.summary || {}).root_group || {});
    return table(['group', 'check', 'passes', 'fails', 'rate'], rows, 'No checks.');
  }

  function kv(obj) {
    return Object.keys(obj || {}).map(function (k) { return '<span class="tag">' + esc(k || '–') + ': ' + count(obj[k]) + '</span>'; }).join(' ');
  }
  function requests() {
    var rows = (model.requests || []).map(function (r) {
      var d = r.duration || {};
      return '<tr data-request="' + esc(r.method + ' ' + r.name) + '"><td>' + esc(r.method) + '</td><td class="name">' + esc(r.name) +
        '</td><td class="n" data-field="count">' + count(r.count) + '</td><td class="n" data-field="failed">' + count(r.failed) +
        '</td><td>' + kv(r.statuses) + '</td><td>' + kv(r.errors) + '</td><td class="n">' + ms(d.avg) +
        '</td><td class="n">' + ms(d['p(95)']) + '</td><td class="n">' + ms(d.max) + '</td></tr>';
    });
    return table(['method', 'name', 'requests', 'failed', 'statuses', 'error codes', 'avg', 'p(95)', 'max'], rows, 'No requests.');
  }

  function groups() {
    var rows = (model.groups || []).map(function (g) {
      var d = g.duration || {};
      return '<tr data-group="' + esc(g.path) + '"><td>' + esc(g.path) + '</td><td class="n">' + count(d.count) + '</td><td class="n">' +
        ms(d.avg) + '</td><td class="n">' + ms(d.med) + '</td><td class="n">' + ms(d['p(95)']) + '</td><td class="n">' + ms(d.max) + '</td></tr>';
    });
    return table(['group', 'count', 'avg', 'med', 'p(95)', 'max'], rows, 'No groups.');
  }

  function scenarios() {
    var rows = (model.scenarios || []).map(function (s) {
      return '<tr><td>' + esc(s.name) + '</td><td>' + esc(s.what) + (s.details ? ' <small>(' + esc(s.details) + ')</small>' : '') +
        '</td><td>' + esc(s.exec) + '</td><td class="n">' + count(s.max_vus) + '</td></tr>';
    });
    return table(['scenario', 'executor', 'exec', 'max VUs'], rows,
      model.live ? 'Scenarios are known once the run starts.' : 'No scenarios in the inputs (a run\'s own report has them).');
  }

  function metricsTable() {
    var ms_ = (model.summary || {}).metrics || {};
    var rows = Object.keys(ms_).sort().map(function (name) {
      var m = ms_[name];
      var cells = Object.keys(m).filter(function (f) { return f !== 'thresholds'; }).map(function (f) {
        return '<span class="stat">' + esc(f) + ' ' + fig(name, f, fieldText(name, f, m[f]), m[f]) + '</span>';
      });
      return '<tr><td class="name">' + esc(name) + '</td><td>' + cells.join(' ') + '</td></tr>';
    });
    return table(['metric', 'figures'], rows, 'No metrics yet.');
  }

  function failures() {
    var f = model.failures;
    if (!f || !f.messages || !f.messages.length) return '';
    var rows = f.messages.map(function (m) { return '<tr><td>' + esc(m.message) + '</td><td class="n">' + count(m.count) + '</td></tr>'; });
    return '<section><h2>Failed iterations</h2>' + table(['error', 'iterations'], rows, '') + '</section>';
  }

  // Charts over time: columns of the timeline's points.
  function column(key) {
    return (model.timeline || []).map(function (p) { var v = p[key]; return isNum(v) ? v : null; });
  }
  function scenarioColumn(name) {
    return (model.timeline || []).map(function (p) { var v = (p.scenario_vus || {})[name]; return isNum(v) ? v : null; });
  }
  function xs() { return (model.timeline || []).map(function (p) { return p.t; }); }

  var CHARTS = [
    { id: 'rates', title: 'Request and iteration rate (per second)', series: function () {
      return [['requests/s', column('reqs_rate')], ['iterations/s', column('iterations_rate')]]; } },
    { id: 'vus', title: 'VUs per scenario', series: function () {
      var s = [['all VUs', column('vus')]];
      (model.scenarios || []).forEach(function (sc) { s.push([sc.name, scenarioColumn(sc.name)]); });
      return s; } },
    { id: 'latency', title: 'Request duration percentiles (ms)', series: function () {
      return [['p(50)', column('p50')], ['p(90)', column('p90')], ['p(95)', column('p95')], ['p(99)', column('p99')]]; } },
    { id: 'failed', title: 'Failed requests (per interval)', bars: true, series: function () {
      return [['failed', column('failed')]]; }, colors: ['#dc2626'] },
    { id: 'phases', title: 'Request phases, average (ms)', series: function () {
      return [['blocked', column('blocked')], ['connecting', column('connecting')], ['TLS handshaking', column('tls_handshaking')],
        ['sending', column('sending')], ['waiting', column('waiting')], ['receiving', column('receiving')]]; } },
    { id: 'checks', title: 'Checks (per interval)', series: function () {
      return [['passed', column('checks_pass')], ['failed', column('checks_fail')]]; }, colors: ['#16a34a', '#dc2626'] },
  ];

  function chartBox(id, title) {
    return '<div class="chart" id="chart-' + id + '" data-chart="' + id + '" data-drawn="0"><h3>' + esc(title) + '</h3><div class="plot"></div></div>';
  }

  function makeChart(def, data) {
    var box = document.getElementById('chart-' + def.id);
    if (!box) return;
    var plot = box.querySelector('.plot');
    var colors = def.colors || COLORS;
    var series = [{}].concat(data.slice(1).map(function (_, i) {
      var s = { label: def.labels[i], stroke: colors[i % colors.length], width: 2, spanGaps: true,
        points: { show: data[0].length < 3 } };
      if (def.bars) { s.paths = uPlot.paths.bars({ size: [0.8, 40] }); s.fill = colors[i % colors.length] + '99'; }
      return s;
    }));
    var opts = {
      width: Math.max(320, plot.clientWidth || 560), height: 220,
      scales: def.scales || { x: { time: false } },
      series: series,
      axes: def.axes || [{ values: function (u, vals) { return vals.map(function (v) { return v + 's'; }); } }, { size: 64 }],
      legend: { show: true },
      hooks: { draw: [function () { box.dataset.drawn = String(Number(box.dataset.drawn) + 1); }] },
    };
    charts[def.id] = new uPlot(opts, data, plot);
  }

  function timelineCharts() {
    CHARTS.forEach(function (def) {
      var s = def.series();
      var data = [xs()].concat(s.map(function (x) { return x[1]; }));
      def.labels = s.map(function (x) { return x[0]; });
      var u = charts[def.id];
      if (u && u.series.length === data.length) u.setData(data);
      else { if (u) u.destroy(); makeChart(def, data); }
    });
  }

  // Labels of a log axis: 1, 2 and 5 of each decade, in ms or s.
  function logLabel(v) {
    if (!isNum(v) || v <= 0) return '';
    var m = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
    if (![1, 2, 5].some(function (k) { return Math.abs(m - k) < 1e-6; })) return '';
    return v >= 1000 ? +(v / 1000).toPrecision(3) + 's' : +v.toPrecision(3) + 'ms';
  }

  function distributionChart() {
    var d = model.distribution;
    if (!d || !d.edges) return;
    var def = { id: 'distribution', labels: ['requests'], bars: true, colors: ['#2563eb'],
      scales: { x: { time: false, distr: 3, log: 10 } },
      axes: [{ values: function (u, vals) { return vals.map(logLabel); } }, { size: 64 }] };
    makeChart(def, [d.edges.slice(0, d.counts.length), d.counts]);
  }

  function distributionSection() {
    var d = model.distribution;
    if (model.live) return '';
    if (!d || !d.edges) {
      return '<section><h2>Latency distribution</h2><p class="empty">No histogram of http_req_duration in the inputs ' +
        '(a run\'s report has one; for `wload report`, give its --out hdr log or its shard summaries).</p></section>';
    }
    var ps = (d.percentiles || []).map(function (p) {
      return '<span class="stat">p(' + p.p + ') <span class="num" data-percentile="' + p.p + '" data-value="' + p.value + '">' + ms(p.value) + '</span></span>';
    }).join(' ');
    return '<section><h2>Latency distribution</h2><p>' + count(d.count) + ' requests · ' + ps + '</p>' +
      chartBox('distribution', 'http_req_duration, log-spaced bins (ms)') + '</section>';
  }

  function header() {
    var status;
    if (model.live) status = model.finished ? '<span class="badge done">run finished</span>' : model.running ?
      '<span class="badge live">live</span>' : '<span class="badge wait">waiting for the run to start</span>';
    else status = '<span class="badge">report</span>';
    var sub = [];
    if (model.started) sub.push('started ' + esc(model.started));
    if (isNum(model.elapsed) && model.elapsed > 0) sub.push('ran ' + secs(model.elapsed));
    if (model.generated) sub.push('generated ' + esc(model.generated));
    if (model.sources && model.sources.length) sub.push('from ' + model.sources.map(esc).join(', '));
    return '<header><h1>' + esc(model.title || 'wload') + ' ' + status + '</h1><p class="sub">' + sub.join(' · ') + '</p></header>';
  }

  // The parts that change with each frame.
  function figures() {
    document.getElementById('overview').innerHTML = overview();
    document.getElementById('thresholds').innerHTML = thresholds();
    document.getElementById('checks').innerHTML = checks();
    document.getElementById('requests').innerHTML = requests();
    document.getElementById('groups').innerHTML = groups();
    document.getElementById('metrics').innerHTML = metricsTable();
    document.getElementById('head').innerHTML = header();
    document.getElementById('failures').innerHTML = failures();
    timelineCharts();
  }

  function render() {
    Object.keys(charts).forEach(function (k) { charts[k].destroy(); delete charts[k]; });
    app.innerHTML = '<div id="head"></div>' +
      '<section><h2>Overview</h2><div id="overview"></div></section>' +
      '<section><h2>Thresholds</h2><div id="thresholds"></div></section>' +
      '<section><h2>Checks</h2><div id="checks"></div></section>' +
      '<section><h2>Over time</h2><div class="charts">' +
      CHARTS.map(function (c) { return chartBox(c.id, c.title); }).join('') + '</div></section>' +
      distributionSection() +
      '<section><h2>Requests by name</h2><div id="requests"></div></section>' +
      '<section><h2>Groups</h2><div id="groups"></div></section>' +
      '<section><h2>Scenarios</h2>' + scenarios() + '</section>' +
      '<div id="failures"></div>' +
      '<section><h2>All metrics</h2><div id="metrics"></div></section>' +
      '<footer>wload · charts by uPlot</footer>';
    figures();
    distributionChart();
    document.body.dataset.ready = '1';
  }

  render();

  if (model.live && window.EventSource) {
    var frames = 0;
    var events = new EventSource('/events');
    events.addEventListener('model', function (e) {
      model = JSON.parse(e.data);
      render();
    });
    events.addEventListener('frame', function (e) {
      var frame = JSON.parse(e.data);
      var point = frame.point;
      delete frame.point;
      var last = (model.timeline || [])[model.timeline.length - 1];
      Object.keys(frame).forEach(function (k) { model[k] = frame[k]; });
      model.running = true;
      if (!last || point.t > last.t) model.timeline.push(point);
      figures();
      frames++;
      document.body.dataset.frames = String(frames);
    });
    events.addEventListener('end', function () {
      model.running = false;
      model.finished = true;
      document.getElementById('head').innerHTML = header();
      events.close();
      document.body.dataset.finished = '1';
    });
  }
})();
