// Drives Debian's chromium with playwright-core for tests/e2e/report.rs:
// opens a report file or a dashboard, blocks every request that is not
// file:// or the dashboard's own 127.0.0.1 server (recording it), and
// prints what the page shows as one JSON line: every figure with its
// metric, field, raw value and text, the tables' rows, and each chart's
// draw count and coloured pixels. With a dashboard, once it has seen three
// frames it stops the run (SIGINT to `stopPid`) and waits for its end.
// Usage: node report_driver.js CONFIG.json
'use strict';
const fs = require('fs');
const { chromium } = require('playwright-core');

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));

// What the page shows, read inside it.
function read() {
  const figures = [...document.querySelectorAll('.num[data-metric]')].map((e) => ({
    metric: e.dataset.metric, field: e.dataset.field, value: e.dataset.value, text: e.textContent,
  }));
  const charts = [...document.querySelectorAll('.chart')].map((box) => {
    const canvas = box.querySelector('canvas');
    let pixels = 0;
    if (canvas && canvas.width > 0 && canvas.height > 0) {
      const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      // Series are drawn in saturated colours; axes, grid and text are grey.
      for (let i = 0; i < data.length; i += 4) {
        const [r, g, b, a] = [data[i], data[i + 1], data[i + 2], data[i + 3]];
        if (a > 128 && Math.abs(r - g) + Math.abs(g - b) + Math.abs(r - b) > 90) pixels++;
      }
    }
    return { id: box.dataset.chart, drawn: Number(box.dataset.drawn), pixels };
  });
  const rows = (sel, attr) => [...document.querySelectorAll(sel)].map((r) => {
    const o = { key: r.getAttribute(attr) };
    r.querySelectorAll('[data-field]').forEach((c) => { o[c.dataset.field] = c.textContent; });
    if (r.dataset.ok !== undefined) o.ok = r.dataset.ok;
    o.text = r.textContent;
    return o;
  });
  return {
    figures, charts,
    checks: rows('tr[data-check]', 'data-check'),
    requests: rows('tr[data-request]', 'data-request'),
    groups: rows('tr[data-group]', 'data-group'),
    thresholds: rows('tr[data-threshold]', 'data-threshold'),
    percentiles: [...document.querySelectorAll('[data-percentile]')].map((e) => ({ p: e.dataset.percentile, value: e.dataset.value })),
    frames: Number(document.body.dataset.frames || 0),
    finished: document.body.dataset.finished === '1',
    errors: window.wloadErrors || [],
  };
}

(async () => {
  const context = await chromium.launchPersistentContext(config.userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
  });
  const blocked = [];
  const pageErrors = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file://') || (config.allow && url.startsWith(config.allow))) return route.continue();
    blocked.push(url);
    return route.abort();
  });
  const page = context.pages()[0] || (await context.newPage());
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });
  await page.goto(config.url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
  const out = { blocked, pageErrors, samples: [] };
  if (config.mode === 'dashboard') {
    // Figures at successive frames while the run goes, then at its end.
    let last = -1;
    while (out.samples.length < 3) {
      await page.waitForFunction((n) => Number(document.body.dataset.frames || 0) > n, last, { timeout: 60000 });
      const s = await page.evaluate(read);
      last = s.frames;
      // A frame before the first request has no http_reqs yet (a loaded
      // machine starts the VUs late): the frames compared are the run's.
      const started = (s.figures || []).some((f) => f.metric === 'http_reqs' && f.field === 'count' && Number(f.value) > 0);
      if (started) out.samples.push(s);
    }
    await page.screenshot({ path: config.screenshot, fullPage: true });
    // Seen enough of the run: stop it (as Ctrl-C does), and see its end.
    if (config.stopPid) process.kill(config.stopPid, 'SIGINT');
    await page.waitForSelector('body[data-finished="1"]', { timeout: 120000 });
  } else {
    await page.screenshot({ path: config.screenshot, fullPage: true });
  }
  out.final = await page.evaluate(read);
  console.log(JSON.stringify(out));
  await context.close();
})().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
