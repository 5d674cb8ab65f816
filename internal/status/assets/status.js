// admit serve's status page: reads /status.json every 2 s and writes it
// into the page with textContent only, so nothing a key or a rule holds
// is ever parsed as HTML.
"use strict";

const every = 2000;
let lastOK = 0;

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function fmt(n, digits) {
  if (n === undefined || n === null) return "";
  if (Math.abs(n) >= 1000) return Math.round(n).toLocaleString("en-US");
  return n.toFixed(digits === undefined ? 1 : digits);
}

function pct(x) { return (100 * x).toFixed(1) + "%"; }

function duration(s) {
  s = Math.floor(s);
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  if (d > 0) return d + "d " + h + "h";
  if (h > 0) return h + "h " + m + "m";
  if (m > 0) return m + "m " + (s % 60) + "s";
  return s + "s";
}

function defs(dl, rows) {
  dl.replaceChildren();
  for (const [k, v, cls] of rows) {
    dl.append(el("dt", k), el("dd", v, cls));
  }
}

const svgNS = "http://www.w3.org/2000/svg";

function spark(allowed, denied) {
  const w = 180, h = 28, n = allowed.length;
  const svg = document.createElementNS(svgNS, "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  svg.setAttribute("viewBox", "0 0 " + w + " " + h);
  let top = 1;
  for (let i = 0; i < n; i++) top = Math.max(top, allowed[i] + denied[i]);
  const line = (vals, color) => {
    const p = document.createElementNS(svgNS, "polyline");
    const pts = [];
    for (let i = 0; i < n; i++) {
      pts.push((i * (w - 2) / Math.max(n - 1, 1) + 1).toFixed(1) + "," + (h - 2 - vals[i] * (h - 4) / top).toFixed(1));
    }
    p.setAttribute("points", pts.join(" "));
    p.setAttribute("fill", "none");
    p.setAttribute("stroke", color);
    p.setAttribute("stroke-width", "1.5");
    svg.append(p);
  };
  line(allowed, "#1f9d55");
  line(denied, "#d64545");
  return svg;
}

function render(s) {
  const inst = s.instance;
  document.getElementById("instance").textContent =
    inst.hostname + " · pid " + inst.pid + " · " + inst.version + " · up " + duration(inst.uptime_seconds);

  const p = s.policy, r = p.last_reload;
  defs(document.getElementById("policy"), [
    ["source", p.source + (p.files.length ? ": " + p.files.join(", ") : "")],
    ["sha256", p.sha256 ? p.sha256.slice(0, 16) + "…" : "—"],
    ["loaded", new Date(p.loaded_at).toLocaleString()],
    ["last reload", (r.ok ? "ok" : "failed") + " at " + new Date(r.at).toLocaleTimeString(), r.ok ? "ok" : "bad"],
  ].concat(r.error ? [["error", r.error, "bad"]] : []));

  const st = s.store;
  defs(document.getElementById("store"), [
    ["kind", st.kind],
    ["calls/s", fmt(st.calls_per_second)],
    ["mean latency", st.calls_per_second > 0 ? fmt(st.mean_latency_ms, 2) + " ms" : "—"],
    ["errors (60 s)", st.errors, st.errors > 0 ? "bad" : ""],
    ["on fallback", st.on_fallback.length ? st.on_fallback.join(", ") : (st.guarded_rules ? "none of " + st.guarded_rules : "none"), st.on_fallback.length ? "bad" : "ok"],
  ]);

  let rate = 0, denied = 0;
  for (const x of s.rules) { rate += x.decisions_per_second; denied += x.decisions_per_second * x.denied_share; }
  defs(document.getElementById("denials"), [
    ["decisions/s", fmt(rate)],
    ["denied since start", s.denied_keys.total.toLocaleString("en-US")],
    ["keys shown", s.denied_keys.top.length + " (sketch of " + s.denied_keys.counters + ")"],
  ]);

  const rb = document.querySelector("#rules tbody");
  rb.replaceChildren();
  for (const x of s.rules) {
    const tr = el("tr");
    tr.append(el("td", x.rule, "key"), el("td", x.kind || ""), el("td", x.limit || ""),
      el("td", fmt(x.decisions_per_second), "num"),
      el("td", pct(x.denied_share), "num" + (x.denied_share > 0 ? " bad" : "")));
    const sp = el("td");
    sp.append(spark(x.allowed, x.denied));
    tr.append(sp);
    const inFlight = el("td", x.in_flight === undefined ? "" : x.in_flight, "num");
    // A cap kept in Redis: the slots held through this instance only.
    if (x.in_flight !== undefined && x.shared) inFlight.append(el("span", " this instance's", "dim small nowrap"));
    tr.append(inFlight, el("td", x.waiting === undefined ? "" : x.waiting, "num"));
    const a = x.adaptive;
    tr.append(el("td", a ? fmt(a.min) + " / " + fmt(a.median) + " / " + fmt(a.max) + (a.unit === "per_second" ? " /s" : " slots") + " (" + a.keys + " keys)" : ""));
    tr.append(el("td", x.fallback === undefined ? (x.shared ? "shared" : "local") : (x.fallback ? "FALLBACK" : "shared, ok"), x.fallback ? "bad" : ""));
    rb.append(tr);
  }
  if (!s.rules.length) {
    const tr = el("tr"), td = el("td", "no rules yet", "empty");
    td.colSpan = 10;
    tr.append(td);
    rb.append(tr);
  }

  document.getElementById("sketchnote").textContent =
    "since start; a space-saving sketch of " + s.denied_keys.counters + " counters: a count is at most its error above the truth";
  const kb = document.querySelector("#keys tbody");
  kb.replaceChildren();
  for (const k of s.denied_keys.top) {
    const tr = el("tr");
    tr.append(el("td", k.rule, "key"), el("td", k.key + (k.truncated ? "…" : ""), "key"),
      el("td", k.count.toLocaleString("en-US"), "num"), el("td", k.error.toLocaleString("en-US"), "num"));
    kb.append(tr);
  }
  if (!s.denied_keys.top.length) {
    const tr = el("tr"), td = el("td", "no key denied yet", "empty");
    td.colSpan = 4;
    tr.append(td);
    kb.append(tr);
  }
}

async function tick() {
  const live = document.getElementById("live");
  try {
    const res = await fetch("/status.json", { cache: "no-store" });
    const body = await res.json();
    if (!res.ok) throw new Error(body.error || res.status);
    render(body);
    lastOK = Date.now();
    live.className = "live";
    live.textContent = "live · updated " + new Date(lastOK).toLocaleTimeString();
  } catch (e) {
    live.className = "live down";
    live.textContent = "cannot reach /status.json (" + e.message + ")" + (lastOK ? "; last update " + new Date(lastOK).toLocaleTimeString() : "") + "; retrying";
  }
  setTimeout(tick, every);
}

tick();
