"""The page's stylesheet and script, embedded in every report (kept in Python so they ship with
the package and the file opens offline). The script only reads the page's JSON blocks
(``#capsule-data``, ``#skill-data``) and the DOM; it fetches nothing."""

CSS = """
:root{--fg:#1d2330;--mute:#5b6475;--line:#dde2ea;--bg:#f7f8fa;--acc:#0072B2;--ok:#1a7f37;
--bad:#c62828}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg)}
header{background:#1d2330;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px}header .sub{color:#b8c0cf;font-size:12px}
nav{position:sticky;top:0;z-index:5;background:#fff;border-bottom:1px solid var(--line);
padding:6px 24px}
nav a{margin-right:16px;color:var(--acc);text-decoration:none;font-weight:600}
main{padding:8px 24px 48px;max-width:1280px}
section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:14px 18px;
margin:14px 0}
h2{margin:0 0 10px;font-size:17px}h3{font-size:14px;margin:14px 0 6px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid var(--line);border-radius:6px;padding:8px 12px;min-width:130px}
.card .k{color:var(--mute);font-size:11px;text-transform:uppercase;letter-spacing:.04em}
.card .v{font-size:20px;font-weight:650}
.card .v.small{font-size:13px;font-weight:500}
table{border-collapse:collapse;width:100%;font-size:12.5px}
th,td{border-bottom:1px solid var(--line);padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f1f3f6;position:sticky;top:38px}
tr.click{cursor:pointer}tr.click:hover{background:#eef5fb}
tr.sel{background:#ddeefa}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:12px}
@media(max-width:1000px){.grid2{grid-template-columns:1fr}}
svg.chart{background:#fff;max-width:100%}
svg .grid{stroke:#eceff3}svg .ax{stroke:#8a93a3}
svg text{font-size:11px;fill:#3c4454}svg .yt{text-anchor:end}svg .xt{text-anchor:middle}
svg .xl{text-anchor:middle;fill:#5b6475}svg .yl{text-anchor:middle;fill:#5b6475}
svg .ct{font-weight:650;font-size:12.5px}svg .lg{font-size:11px}
.pill{display:inline-block;padding:0 6px;border-radius:9px;font-size:11px;font-weight:600}
.pill.active{background:#e3f4e8;color:var(--ok)}.pill.deprecated{background:#fde8e6;color:var(--bad)}
.pill.candidate{background:#fff4d6;color:#8a6100}.pill.pass{background:#e3f4e8;color:var(--ok)}
.pill.fail{background:#fde8e6;color:var(--bad)}.pill.warn{background:#fff4d6;color:#8a6100}
pre{background:#f4f6f9;border:1px solid var(--line);border-radius:6px;padding:8px;white-space:
pre-wrap;word-break:break-word;max-height:360px;overflow:auto;font-size:12px;margin:4px 0 8px}
.filters{display:flex;flex-wrap:wrap;gap:8px;align-items:end;margin-bottom:8px}
.filters label{font-size:11px;color:var(--mute);display:flex;flex-direction:column}
.filters select,.filters input{font:inherit;padding:3px 4px;min-width:90px}
.pager{margin:8px 0;display:flex;gap:8px;align-items:center}
button{font:inherit;padding:3px 10px;cursor:pointer}
.mute{color:var(--mute)}.note{color:var(--mute);font-size:12px}.note.warn{color:#8a6100;background:#fff4d6;padding:4px 8px}
.ci{display:block;color:var(--mute);font-size:11px;font-weight:normal}.ci .noise{color:#D55E00}
.ci .real{color:#009E73}
.detail{border-left:3px solid var(--acc);padding:4px 12px;margin:8px 0;background:#fbfcfe}
details>summary{cursor:pointer;font-weight:600;margin:6px 0}
.scroll{overflow-x:auto;max-width:100%}.scroll th{position:static}
"""

JS = r"""
(function () {
  'use strict';
  function $(sel, root) { return (root || document).querySelector(sel); }
  function esc(s) {
    return String(s == null ? '' : s).replace(/[&<>"']/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c];
    });
  }
  function readJSON(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }
  var skills = readJSON('skill-data') || {};
  var data = readJSON('capsule-data');

  // ---- skills table: a row opens its YAML and can filter the capsule browser ----
  function showSkill(run, id) {
    var box = $('#skill-detail');
    var s = (skills[run] || {})[id];
    if (!box || !s) { return; }
    box.innerHTML = '<h3>' + esc(id) + ' <span class="mute">(' + esc(run) + ')</span></h3>' +
      '<div>' + esc(s.life) + '</div>' +
      '<pre>' + esc(s.yaml || '(no YAML file in skills/)') + '</pre>' +
      '<button type="button" id="skill-capsules">Show its capsules in the browser</button>';
    box.hidden = false;
    $('#skill-capsules').addEventListener('click', function () {
      if (!data) { return; }
      setSelect('f-run', String(data.runs.indexOf(run)));
      setSelect('f-skill', id);
      apply();
      document.getElementById('capsules').scrollIntoView();
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll('tr[data-skill]'), function (tr) {
    tr.addEventListener('click', function () {
      Array.prototype.forEach.call(document.querySelectorAll('tr.sel'), function (t) {
        t.classList.remove('sel');
      });
      tr.classList.add('sel');
      showSkill(tr.getAttribute('data-run'), tr.getAttribute('data-skill'));
    });
  });

  if (!data) { return; }

  // ---- capsule browser: filters over the embedded rows, one page rendered at a time ----
  var C = {};
  data.columns.forEach(function (c, i) { C[c] = i; });
  var S = data.strings;
  var PAGE = 50;
  var shown = [];
  var page = 0;

  function str(row, col) { var v = row[C[col]]; return v == null ? '' : S[v]; }
  function setSelect(id, value) {
    var el = document.getElementById(id);
    if (!el) { return; }
    el.value = value;
    if (el.id === 'f-run') { fillSkills(); el.value = value; }
  }
  function options(el, values, all) {
    el.innerHTML = '<option value="">' + esc(all) + '</option>' + values.map(function (v) {
      return '<option value="' + esc(v) + '">' + esc(v) + '</option>';
    }).join('');
  }
  function runsSelected() {
    var r = $('#f-run').value;
    return r === '' ? data.runs.map(function (_, i) { return i; }) : [Number(r)];
  }
  function fillSkills() {
    var seen = {};
    runsSelected().forEach(function (ri) {
      data.rows[ri].forEach(function (row) { seen[str(row, 'skill_id')] = 1; });
    });
    var keep = $('#f-skill').value;
    options($('#f-skill'), Object.keys(seen).sort(), 'any skill');
    if (seen[keep]) { $('#f-skill').value = keep; }
  }
  function init() {
    $('#f-run').innerHTML = (data.runs.length > 1 ? '<option value="">all runs</option>' : '') +
      data.runs.map(function (r, i) {
        return '<option value="' + i + '">' + esc(r) + '</option>';
      }).join('');
    var statuses = {}, rounds = {};
    data.rows.forEach(function (rows) {
      rows.forEach(function (row) {
        statuses[str(row, 'exit_status') || '(none)'] = 1;
        rounds[row[C.round]] = 1;
      });
    });
    options($('#f-status'), Object.keys(statuses).sort(), 'any status');
    options($('#f-round'), Object.keys(rounds).map(Number).sort(function (a, b) {
      return a - b; }).map(String), 'any round');
    fillSkills();
    ['f-round', 'f-split', 'f-skill', 'f-result', 'f-status'].forEach(function (id) {
      document.getElementById(id).addEventListener('change', apply);
    });
    $('#f-run').addEventListener('change', function () { fillSkills(); apply(); });
    $('#f-task').addEventListener('input', apply);
    $('#prev').addEventListener('click', function () { if (page > 0) { page--; render(); } });
    $('#next').addEventListener('click', function () {
      if ((page + 1) * PAGE < shown.length) { page++; render(); }
    });
    apply();
  }
  function apply() {
    var round = $('#f-round').value, split = $('#f-split').value, skill = $('#f-skill').value;
    var result = $('#f-result').value, status = $('#f-status').value;
    var task = $('#f-task').value.trim().toLowerCase();
    shown = [];
    runsSelected().forEach(function (ri) {
      var rows = data.rows[ri];
      for (var i = 0; i < rows.length; i++) {
        var row = rows[i];
        if (round !== '' && String(row[C.round]) !== round) { continue; }
        if (split && str(row, 'split') !== split) { continue; }
        if (skill && str(row, 'skill_id') !== skill) { continue; }
        if (result === 'pass' && !row[C.passed]) { continue; }
        if (result === 'fail' && (row[C.passed] || row[C.infra_failure])) { continue; }
        if (result === 'infra' && !row[C.infra_failure]) { continue; }
        if (status && (str(row, 'exit_status') || '(none)') !== status) { continue; }
        if (task && str(row, 'task_id').toLowerCase().indexOf(task) < 0) { continue; }
        shown.push([ri, i]);
      }
    });
    page = 0;
    render();
  }
  function pill(row) {
    if (row[C.infra_failure]) { return '<span class="pill warn">infra</span>'; }
    return row[C.passed] ? '<span class="pill pass">pass</span>' :
      '<span class="pill fail">fail</span>';
  }
  // The Critic's failure pattern is what a reader scans for; its attribution (helped, hurt,
  // neutral, inapplicable) stands beside it.
  function critic(row) {
    if (row[C.attribution] == null) return '';
    return esc(str(row, 'pattern')) + ' <span class="mute">(' + esc(str(row, 'attribution')) +
      ')</span>';
  }
  function render() {
    var body = $('#capsule-rows');
    var start = page * PAGE, stop = Math.min(shown.length, start + PAGE);
    var html = [];
    for (var k = start; k < stop; k++) {
      var ri = shown[k][0], row = data.rows[ri][shown[k][1]];
      html.push('<tr class="click capsule-row" data-k="' + k + '"><td>' + esc(data.runs[ri]) +
        '</td><td class="num">' + row[C.round] + '</td><td>' + esc(str(row, 'split')) +
        '</td><td>' + esc(str(row, 'task_id')) + (row[C.attempt] ? ' <span class="mute">(' +
        (row[C.attempt] === 2 ? 'impossible twin' : 'probe') + ')</span>' : '') +
        '</td><td>' + esc(str(row, 'skill_id')) + '</td><td>' + pill(row) +
        '</td><td>' + esc(str(row, 'exit_status')) + '</td><td>' + critic(row) + '</td></tr>');
    }
    body.innerHTML = html.join('');
    $('#capsule-count').textContent = shown.length + ' capsule(s) match; showing ' +
      (shown.length ? start + 1 : 0) + '–' + stop;
    Array.prototype.forEach.call(body.querySelectorAll('tr'), function (tr) {
      tr.addEventListener('click', function () { detail(Number(tr.getAttribute('data-k'))); });
    });
  }
  function detail(k) {
    var ri = shown[k][0], row = data.rows[ri][shown[k][1]];
    var run = data.runs[ri], skill = str(row, 'skill_id');
    var sk = (skills[run] || {})[skill];
    var task = (data.tasks[ri] || {})[str(row, 'task_id')];
    var verdict = row[C.attribution] == null ? '<p class="mute">No Critic verdict (the Critic ' +
      'reviews train failures only).</p>' : '<p><b>' + esc(str(row, 'attribution')) + '</b>, ' +
      'pattern “' + esc(str(row, 'pattern')) + '”, confidence ' + esc(row[C.confidence]) +
      '</p><pre>' + esc(row[C.rationale]) + '</pre>';
    $('#capsule-detail').innerHTML = '<h3>' + esc(str(row, 'task_id')) + ' · round ' +
      row[C.round] + ' · ' + esc(str(row, 'split')) + ' · ' + pill(row) + '</h3>' +
      '<div class="note">capsule ' + esc(row[C.capsule_id]) + ' · full row: ' +
      esc(str(row, 'part')) + ' row ' + row[C.row] + ' · tokens ' + esc(row[C.input_tokens]) +
      ' in / ' + esc(row[C.output_tokens]) + ' out</div>' +
      (task ? '<h3>Task</h3><pre>' + esc(task) + '</pre>' : '') +
      '<h3>Injected guidance: ' + esc(skill) + '</h3>' + (sk ? '<pre>' + esc(sk.guidance) +
      '</pre>' : '<p class="mute">' + (skill === 'NONE' ? 'No skill injected (NONE).' :
      'No YAML for this skill.') + '</p>') +
      '<h3>Model output</h3><pre>' + esc(row[C.output]) + '</pre>' +
      '<h3>Grader trace (' + esc(str(row, 'exit_status')) + ')</h3><pre>' +
      esc(row[C.grader_trace]) + '</pre><h3>Critic verdict</h3>' + verdict;
    $('#capsule-detail').hidden = false;
  }
  init();
})();
"""
