"""The inline CSS and script of the `tau report` page (it fetches nothing).

Without the script everything is still there (trajectories are closed `<details>`); it
only filters and opens the episode a heatmap cell links to.
"""

from __future__ import annotations

CSS = """
:root{--fg:#1d232a;--muted:#66707a;--line:#d9dee3;--bg:#fff;--soft:#f5f7f9}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg);margin:0;padding:0 24px 48px;max-width:1280px}
h1{font-size:22px;margin:20px 0 4px}h2{font-size:18px;margin:28px 0 8px;
border-bottom:1px solid var(--line);padding-bottom:4px}h3{font-size:16px;margin:20px 0 6px}
h5{margin:10px 0 4px;font-size:13px}
nav a{margin-right:14px}.muted{color:var(--muted)}
table{border-collapse:collapse;font-size:13px}th,td{border:1px solid var(--line);
padding:3px 8px;text-align:right;vertical-align:top}th{background:var(--soft)}
td.l,th.l{text-align:left}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px}
.charts{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
svg .grid{stroke:#e6e9ec}svg .zero{stroke:#555;stroke-dasharray:3 3}svg .axis{stroke:#888}
svg .tick{font-size:11px;fill:#555}svg .label{font-size:12px;fill:#333}
svg .pt{font-size:11px;fill:#222}
table.heat td{padding:0;text-align:center}table.heat td a{display:block;padding:2px 6px;
color:#111;text-decoration:none;min-width:46px}table.heat td.l{padding:2px 6px;max-width:520px;
white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.filters{position:sticky;top:0;background:var(--bg);padding:8px 0;border-bottom:1px solid
var(--line);z-index:2}.filters label{margin-right:14px}
details.task{border:1px solid var(--line);border-radius:6px;margin:6px 0;padding:4px 10px}
details.task>summary{cursor:pointer;font-weight:600}
details.episode{margin:6px 0 6px 10px;border-left:3px solid var(--line);padding-left:10px}
details.episode>summary{cursor:pointer}
.badge{padding:0 6px;border-radius:8px;font-size:12px;color:#fff}
.badge.pass{background:#1a9850}.badge.fail{background:#d73027}.badge.error{background:#777}
.conv{margin:8px 0}
.msg{margin:6px 0;padding:6px 10px;border-radius:6px;max-width:980px}
.msg .who{font-size:11px;letter-spacing:.04em;color:var(--muted)}
.msg .text{white-space:pre-wrap}.msg.user{background:#eef4ff}.msg.agent{background:#f1f8ef}
.msg.tool{background:var(--soft);margin-left:28px}.msg.system{background:var(--soft)}
.call .fn{font-family:ui-monospace,monospace;font-weight:600}
pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font:12px/1.4 ui-monospace,
SFMono-Regular,Menlo,monospace}
.verdict{margin:8px 0;padding:6px 10px;border-radius:6px}.verdict.pass{background:#e3f4e6}
.verdict.fail{background:#fde6e4}.verdict.error{background:#eee}
.warn{color:#8a5a00}table.diff td,table.diff th{text-align:left}
.instr{white-space:pre-wrap;background:var(--soft);padding:6px 10px;border-radius:6px}
details.episode>summary .why{color:#9b2c20;font-size:13px}
.msg .md p{margin:2px 0}.msg .md ul,.msg .md ol{margin:2px 0;padding-left:22px}
.msg .md table{margin:4px 0}.msg .md code{background:#0000000d;padding:0 3px;border-radius:3px}
.msg.sysref{font-size:12px;color:var(--muted)}
"""

JS = """
(function () {
  var q = new URLSearchParams(location.search);
  var run = document.getElementById('f-run');
  var outcome = document.getElementById('f-outcome');
  var task = document.getElementById('f-task');
  if (q.get('run')) run.value = q.get('run');
  if (q.get('outcome')) outcome.value = q.get('outcome');
  if (q.get('task')) task.value = q.get('task');
  function apply() {
    var r = run.value, o = outcome.value, t = task.value.trim();
    var shown = 0, total = 0;
    document.querySelectorAll('section.run').forEach(function (sec) {
      var runOk = !r || sec.dataset.run === r, inRun = 0;
      sec.querySelectorAll('details.task').forEach(function (td) {
        var dt = td.dataset.task;
        var taskOk = !t || dt === t || dt.slice(-t.length - 1) === '/' + t, n = 0;
        td.querySelectorAll('details.episode').forEach(function (ep) {
          total += 1;
          var oc = ep.dataset.outcome;
          var ok = runOk && taskOk && (!o || oc === o || (o === 'notpass' && oc !== 'pass'));
          ep.hidden = !ok;
          if (ok) n += 1;
        });
        td.hidden = n === 0;
        inRun += n;
      });
      sec.hidden = inRun === 0;
      shown += inRun;
    });
    document.getElementById('f-count').textContent = shown + ' of ' + total + ' episodes shown';
  }
  function openHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id ? document.getElementById(id) : null;
    if (!el || !el.closest('#trajectories')) return;
    if (el.closest('[hidden]')) {
      run.value = ''; outcome.value = ''; task.value = ''; apply();
    }
    for (var p = el; p; p = p.parentElement) { if (p.tagName === 'DETAILS') p.open = true; }
    el.scrollIntoView();
  }
  [run, outcome, task].forEach(function (el) { el.addEventListener('input', apply); });
  window.addEventListener('hashchange', openHash);
  apply();
  openHash();
  document.body.setAttribute('data-ready', '1');
})();
"""
