// The live page: a partition table, a partition's count over evaluation time and its
// retained elements. Every number arrives as {exact, compact, approx}: exact digits are
// shown as text, `approx` (a float) only places points on the charts.
"use strict";

const MAX_ROWS = 500; // rows drawn after search and sort; the rest are counted
const COLOURS = ["#2b59c3", "#d1495b", "#00798c", "#edae49", "#66a182", "#8d5fd3", "#30343f", "#e07a5f"];
const state = {
  meta: null, q: 0, rows: [], sortKey: "count", sortAsc: false, pid: null, detail: null,
  strategy: null, matchN: 0, containing: null, match: null, timer: null, busy: false,
};

const $ = (id) => document.getElementById(id);

async function api(path, options) {
  const res = await fetch(path, options);
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

function say(text) {
  const m = $("message");
  m.textContent = text || "";
  m.classList.toggle("shown", Boolean(text));
}

function fmtTime(t) {
  if (t === null || t === undefined) return "–";
  if (!state.meta.datetime) return String(t);
  return new Date(t * 1000).toISOString().slice(0, 16).replace("T", " ");
}

function axisTime(t) {
  return state.meta.datetime ? new Date(t * 1000) : t;
}

function numberCell(n) {
  const td = document.createElement("td");
  if (!n) { td.textContent = "–"; return td; }
  td.textContent = n.exact;
  td.dataset.exact = n.exact;
  if (n.compact !== n.exact) {
    const c = document.createElement("span");
    c.className = "compact";
    c.textContent = n.compact;
    td.appendChild(c);
  }
  return td;
}

// Exact integers from decimal strings: BigInt compares them without rounding.
function big(n) { return n ? BigInt(n.exact) : -1n; }

function columns() {
  const cols = [{ id: "key", label: "partition", cls: "key" }, { id: "events", label: "events" }];
  for (const s of state.meta.strategies) {
    cols.push({ id: "count:" + s, label: state.meta.strategies.length > 1 ? `count (${s})` : "count" });
  }
  if (state.meta.exact) {
    cols.push({ id: "exact", label: "exact count" });
    cols.push({ id: "recall", label: "recall" });
  }
  return cols;
}

function sortValue(row, key) {
  if (key === "key") return row.key.join(" / ");
  if (key === "events") return BigInt(row.events);
  if (key === "exact") return big(row.exact);
  if (key === "recall") return row.recall === null ? -1 : row.recall;
  if (key === "count") key = "count:" + state.meta.strategies[0];
  return big(row.counts[key.slice(6)]);
}

function drawHead() {
  const head = $("head");
  head.innerHTML = "";
  const primary = "count:" + state.meta.strategies[0];
  for (const col of columns()) {
    const th = document.createElement("th");
    th.textContent = col.label;
    th.dataset.sort = col.id;
    if (col.cls) th.className = col.cls;
    const active = state.sortKey === col.id || (state.sortKey === "count" && col.id === primary);
    if (active) th.classList.add("sorted", state.sortAsc ? "asc" : "desc");
    th.addEventListener("click", () => {
      state.sortAsc = state.sortKey === col.id ? !state.sortAsc : col.id === "key";
      state.sortKey = col.id;
      drawHead();
      drawTable();
    });
    head.appendChild(th);
  }
}

function drawTable() {
  const needle = $("search").value.trim().toLowerCase();
  let rows = state.rows;
  if (needle) rows = rows.filter((r) => r.key.join(" / ").toLowerCase().includes(needle));
  const key = state.sortKey;
  rows = rows.slice().sort((a, b) => {
    const x = sortValue(a, key), y = sortValue(b, key);
    const c = x < y ? -1 : x > y ? 1 : 0;
    return state.sortAsc ? c : -c;
  });
  $("shown").textContent = rows.length > MAX_ROWS
    ? `${MAX_ROWS} of ${rows.length} partitions shown` : `${rows.length} partitions`;
  const body = document.querySelector("#partitions tbody");
  const frag = document.createDocumentFragment();
  for (const r of rows.slice(0, MAX_ROWS)) {
    const tr = document.createElement("tr");
    tr.dataset.pid = r.pid;
    if (r.pid === state.pid) tr.className = "selected";
    const k = document.createElement("td");
    k.className = "key";
    k.textContent = r.key.length ? r.key.map((v) => (v === null ? "NULL" : v)).join(" / ") : "(all)";
    tr.appendChild(k);
    const ev = document.createElement("td");
    ev.textContent = r.events;
    tr.appendChild(ev);
    for (const s of state.meta.strategies) tr.appendChild(numberCell(r.counts[s]));
    if (state.meta.exact) {
      tr.appendChild(numberCell(r.exact));
      const rc = document.createElement("td");
      rc.textContent = r.recall === null ? "–" : (100 * r.recall).toFixed(1) + " %";
      tr.appendChild(rc);
    }
    tr.addEventListener("click", () => choose(r.pid));
    frag.appendChild(tr);
  }
  body.replaceChildren(frag);
}

async function loadTable() {
  state.rows = await api(`/api/table?q=${state.q}`);
  drawTable();
}

async function loadStatus() {
  const s = await api("/api/status");
  $("clock").textContent = fmtTime(s.clock);
  const pct = s.total ? Math.floor((100 * s.fed) / s.total) : 100;
  if (s.streaming) {
    $("progress").textContent = `watching: ${s.fed} events in ${s.batches} micro-batches, ${s.late} late`;
  } else {
    $("progress").textContent = s.finished ? `replay finished (${s.total} events)` : `${s.fed} / ${s.total} events (${pct} %)`;
  }
  $("evaluations").textContent = s.evaluations;
  $("last-eval").textContent = s.last_evaluation ? `last at ${fmtTime(s.last_evaluation.at)}` : "";
}

async function refresh() {
  if (state.busy) return;
  state.busy = true;
  try {
    await api("/api/refresh", { method: "POST" });
    await Promise.all([loadStatus(), loadTable(), state.pid === null ? null : loadPartition()]);
    say("");
  } catch (e) {
    say(String(e.message || e));
  } finally {
    state.busy = false;
  }
}

async function choose(pid) {
  state.pid = pid;
  state.matchN = 0;
  state.containing = null;
  for (const tr of document.querySelectorAll("#partitions tbody tr")) {
    tr.classList.toggle("selected", Number(tr.dataset.pid) === pid);
  }
  try {
    await loadPartition();
    say("");
  } catch (e) {
    say(String(e.message || e));
  }
}

async function loadPartition() {
  const d = await api(`/api/partition?q=${state.q}&pid=${state.pid}`);
  state.detail = d;
  const name = d.key.length ? d.key.map((v) => (v === null ? "NULL" : v)).join(" / ") : "(all)";
  $("partition-title").textContent = `partition ${name}`;
  const last = d.series[d.series.length - 1];
  $("partition-info").textContent =
    `${last.events} events, ${d.series.length} evaluations since its first event; ` +
    `summary size ${state.meta.size}`;
  drawChart(d);
  await loadMatch();
}

function drawChart(d) {
  const x = d.series.map((p) => axisTime(p.at));
  const traces = state.meta.strategies.map((s, i) => ({
    name: `summary (${s})`, x, y: d.series.map((p) => p.counts[s].approx),
    text: d.series.map((p) => `#${p.evaluation}: ${p.counts[s].exact}`), hoverinfo: "text+name",
    mode: "lines+markers", line: { shape: "hv", color: COLOURS[i % COLOURS.length] },
  }));
  if (state.meta.exact) {
    traces.push({
      name: "exact", x, y: d.series.map((p) => p.exact.approx),
      text: d.series.map((p) => `#${p.evaluation}: ${p.exact.exact}`), hoverinfo: "text+name",
      mode: "lines+markers", line: { shape: "hv", dash: "dash", color: "#30343f" },
    });
  }
  const zeros = traces.some((t) => t.y.some((v) => v === 0));
  const title = "count at each evaluation" + (zeros ? " (a count of 0 has no place on the log scale)" : "");
  Plotly.react("chart", traces, {
    margin: { l: 60, r: 10, t: 28, b: 40 }, title: { text: title, font: { size: 13 } },
    yaxis: { type: "log", title: "count (log)" }, xaxis: { title: "evaluation time" },
    legend: { orientation: "h", y: -0.25 },
  }, { displaylogo: false, responsive: true });
}

async function loadMatch() {
  const d = state.detail;
  const els = d.elements[state.strategy] || [];
  $("timeline-bar").hidden = false;
  let m = null;
  if (els.length) {
    const extra = state.containing === null ? "" : `&containing=${state.containing}`;
    const r = await api(`/api/match?q=${state.q}&pid=${state.pid}&strategy=${state.strategy}&n=${state.matchN}${extra}`);
    m = r.match;
    if (r.gave_up) $("match-info").textContent = "too many partial matches to search; click an element";
    else if (m === null) $("match-info").textContent = state.matchN ? `no match #${state.matchN + 1}` : "no match among the retained elements";
    else $("match-info").textContent = `match #${state.matchN + 1}` + (state.containing === null ? "" : ` with element ${state.containing + 1}`);
  } else {
    $("match-info").textContent = "nothing retained";
  }
  state.match = m;
  drawTimeline(els, m);
}

function drawTimeline(els, match) {
  const alphabet = state.meta.queries[state.q].alphabet.split("");
  const traces = alphabet.map((c, i) => {
    const idx = els.map((e, j) => j).filter((j) => els[j][0] === c);
    return {
      name: c, x: idx.map((j) => axisTime(els[j][1])), y: idx.map(() => c), customdata: idx,
      text: idx.map((j) => `element ${j + 1}: ${c} at ${fmtTime(els[j][1])}, value ${els[j][2]}`),
      hoverinfo: "text", mode: "markers", marker: { size: 11, color: COLOURS[i % COLOURS.length], opacity: 0.75 },
    };
  });
  if (match) {
    traces.push({
      name: "match", x: match.map((j) => axisTime(els[j][1])), y: match.map((j) => els[j][0]), customdata: match,
      hoverinfo: "skip", mode: "lines+markers",
      marker: { size: 17, color: "rgba(0,0,0,0)", line: { width: 3, color: "#111" } }, line: { color: "#111", width: 1.5 },
    });
    $("match-text").textContent = "match: " + match.map((j) => `${els[j][0]}@${fmtTime(els[j][1])}`).join("  ");
  } else {
    $("match-text").textContent = "";
  }
  const div = $("timeline");
  Plotly.react(div, traces, {
    margin: { l: 40, r: 10, t: 28, b: 40 }, title: { text: `retained elements (${els.length})`, font: { size: 13 } },
    yaxis: { type: "category", categoryorder: "array", categoryarray: alphabet }, xaxis: { title: "event time" },
    showlegend: true, legend: { orientation: "h", y: -0.25 },
  }, { displaylogo: false, responsive: true });
  if (!div.dataset.bound) {
    div.on("plotly_click", (ev) => {
      const p = ev.points[0];
      if (!p || p.customdata === undefined) return;
      state.containing = p.customdata;
      state.matchN = 0;
      loadMatch().catch((e) => say(String(e.message || e)));
    });
    div.dataset.bound = "1";
  }
}

function setAuto(seconds) {
  if (state.timer) clearInterval(state.timer);
  state.timer = seconds > 0 ? setInterval(refresh, seconds * 1000) : null;
}

async function start() {
  state.meta = await api("/api/meta");
  document.title = `suse live: ${state.meta.name}`;
  $("job-name").textContent = state.meta.name;
  const qs = $("query");
  state.meta.queries.forEach((q, i) => qs.add(new Option(q.label, i)));
  $("query-box").hidden = false;
  const showQuery = () => {
    const q = state.meta.queries[state.q];
    $("query-text").textContent = `${q.regex}, window ${q.window}${q.policy === "next" ? ", next-match" : ""}`;
  };
  showQuery();
  qs.hidden = state.meta.queries.length < 2;
  qs.addEventListener("change", () => {
    state.q = Number(qs.value);
    state.pid = null; // partitions differ between queries: clear the partition view
    state.detail = null;
    Plotly.purge("chart");
    Plotly.purge("timeline");
    $("timeline-bar").hidden = true;
    $("match-text").textContent = "";
    $("partition-title").textContent = "choose a partition";
    showQuery();
    loadTable().catch((e) => say(String(e.message || e)));
  });
  const st = $("strategy");
  state.meta.strategies.forEach((s) => st.add(new Option(s, s)));
  state.strategy = state.meta.strategies[0];
  st.addEventListener("change", () => {
    state.strategy = st.value;
    state.matchN = 0;
    state.containing = null;
    loadMatch().catch((e) => say(String(e.message || e)));
  });
  $("prev-match").addEventListener("click", () => {
    if (state.matchN > 0) { state.matchN -= 1; loadMatch().catch((e) => say(String(e.message || e))); }
  });
  $("next-match").addEventListener("click", () => {
    if (state.match) { state.matchN += 1; loadMatch().catch((e) => say(String(e.message || e))); }
  });
  $("search").addEventListener("input", drawTable);
  $("refresh").addEventListener("click", refresh);
  const auto = $("auto");
  const every = String(state.meta.refresh_seconds);
  if (![...auto.options].some((o) => o.value === every)) auto.add(new Option(`${every} s`, every));
  auto.value = every;
  auto.addEventListener("change", () => setAuto(Number(auto.value)));
  drawHead();
  await refresh(); // opening the page is a look at the result: an evaluation
  setAuto(Number(auto.value));
  setInterval(() => loadStatus().catch(() => say("the server is not answering")), 1000);
}

start().catch((e) => say(String(e.message || e)));
