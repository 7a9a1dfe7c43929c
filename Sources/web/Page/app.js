// The page: the counter and the profile of the SharedState case study, on one shared key.
import { SharedMirror } from "/shared-mirror.js";

const parameters = new URLSearchParams(location.search);
const element = (id) => document.getElementById(id);
const name = parameters.get("key") ?? "stats";
element("key").textContent = `key: ${name}`;
const keyProblem = SharedMirror.keyProblem(name);
if (keyProblem) {
  // A key the broker would refuse: the page says so, and does not connect, rather than count
  // taps that never go out.
  element("problem").textContent = `The page's key (?key=) is refused: ${keyProblem}`;
  element("problem").hidden = false;
  element("connection").textContent = "not connected";
  element("connection").dataset.state = "disconnected";
  for (const button of document.querySelectorAll("button")) button.disabled = true;
  throw new Error(keyProblem);
}
const mirror = new SharedMirror();
const stats = mirror.key(name, { count: 0, maxCount: 0, minCount: 0, numberOfCounts: 0 });
window.sharedMirror = mirror;
window.stats = stats;

function isPrime(number) {
  if (number <= 1) return false;
  if (number <= 3) return true;
  for (let divisor = 2; divisor * divisor <= number; divisor += 1) if (number % divisor === 0) return false;
  return true;
}

element("increment").onclick = () =>
  stats.withLock((s) => {
    s.count += 1;
    s.numberOfCounts += 1;
    s.maxCount = Math.max(s.maxCount, s.count);
  });
element("decrement").onclick = () =>
  stats.withLock((s) => {
    s.count -= 1;
    s.numberOfCounts += 1;
    s.minCount = Math.min(s.minCount, s.count);
  });
element("reset").onclick = () => stats.withLock(() => ({ count: 0, maxCount: 0, minCount: 0, numberOfCounts: 0 }));
element("prime").onclick = () => {
  const count = stats.value.count;
  element("alert-text").textContent = !stats.synced
    ? "The count is not known until the broker answers."
    : isPrime(count)
      ? `👍 The number ${count} is prime!`
      : `👎 The number ${count} is not prime :(`;
  element("alert").showModal();
};

// Until the broker answers, the page shows no count: a 0 there would be a false one.
stats.subscribe((value, key) => {
  const shown = (number) => (key.synced ? String(number) : "–");
  element("count").textContent = shown(value.count);
  element("profile-count").textContent = shown(value.count);
  element("max").textContent = shown(value.maxCount);
  element("min").textContent = shown(value.minCount);
  element("taps").textContent = shown(value.numberOfCounts);
});

mirror.subscribe(() => {
  const connection = element("connection");
  connection.dataset.state = mirror.state;
  connection.textContent = mirror.state;
  // What the broker refused last (a key or value it does not take, a store it cannot reach),
  // until a write goes through again.
  const problem = element("problem");
  problem.hidden = !mirror.problem;
  const refused = mirror.refused === 1 ? "1 tap refused" : `${mirror.refused} taps refused`;
  const readOnly = mirror.readOnly ? `read-only · ${refused} · ` : "";
  problem.textContent = mirror.problem ? `${readOnly}The broker refused: ${mirror.problem}` : "";
  const pending = element("pending");
  const waiting = mirror.pending;
  pending.hidden = waiting === 0;
  pending.textContent = waiting === 1 ? "1 tap waits for the broker" : `${waiting} taps wait for the broker`;
});

// The inspector: the broker's figures (through the front, from the broker's metrics) and what
// this tab knows of its key from the protocol (version, the writers whose writes it holds).
const history = []; // writes per second, the last minute
let lastSample = null;

function drawChart() {
  const top = Math.max(1, ...history);
  const step = 300 / 59;
  // The newest sample at the right edge ("now"), each older one a second further left.
  const offset = 300 - (history.length - 1) * step;
  const points = history.map(
    (rate, index) => `${(offset + index * step).toFixed(1)},${(60 - (rate / top) * 56).toFixed(1)}`,
  );
  const first = points.length ? points[0].split(",")[0] : "0";
  const last = points.length ? points[points.length - 1].split(",")[0] : "0";
  element("inspect-chart").innerHTML = points.length
    ? `<polyline points="${first},60 ${points.join(" ")} ${last},60"></polyline>`
    : "";
  // The chart's height is the minute's peak, so the peak is what its top means.
  const peak = Math.max(0, ...history);
  element("inspect-peak").textContent = !points.length
    ? ""
    : peak > 0
      ? `top: ${peak.toFixed(peak < 10 ? 1 : 0)} per second`
      : "no writes";
}

function showKey() {
  const writers = [...stats.writers].reverse().slice(0, 4);
  const row = document.createElement("tr");
  const cells = [stats.name, stats.synced ? String(stats.version) : "–"].map((text) => {
    const cell = document.createElement("td");
    cell.textContent = text;
    return cell;
  });
  const names = document.createElement("td");
  names.className = "writers";
  names.textContent = writers.length
    ? writers.map(([client, write]) => `${client === mirror.clientID ? "this tab" : client} (${write})`).join(", ")
    : "–";
  row.append(...cells, names);
  element("inspect-table").replaceChildren(row);
}

async function inspect() {
  let inspection = {};
  try {
    inspection = await (await fetch("/inspect", { cache: "no-store" })).json();
  } catch (error) {
    inspection = { problem: `the front does not answer: ${error.message}` };
  }
  const broker = inspection.broker;
  element("inspect-instance").textContent = mirror.instance ?? "–";
  element("inspect-clients").textContent = broker ? broker.clients : "–";
  element("inspect-active").textContent = broker ? broker.activeClients : "–";
  element("inspect-keys").textContent = broker ? broker.keys : "–";
  element("inspect-problem").hidden = !inspection.problem;
  element("inspect-problem").textContent = inspection.problem ?? "";
  // The broker's applied writes when its figures are there, otherwise this key's versions (one
  // per write applied to it).
  const sample = {
    at: performance.now(),
    writes: broker ? broker.writesApplied : stats.version,
    source: broker ? "broker" : "key",
    instance: mirror.instance,
  };
  element("inspect-rate-source").textContent =
    sample.source === "broker"
      ? `writes per second (the broker at ${new URL(inspection.metrics).host})`
      : `writes per second (${stats.name})`;
  if (lastSample && lastSample.source === sample.source && lastSample.instance === sample.instance) {
    // A restarted broker counts from 0 again: no negative rate.
    const rate = Math.max(0, sample.writes - lastSample.writes) / ((sample.at - lastSample.at) / 1000);
    history.push(rate);
    if (history.length > 60) history.shift();
    element("inspect-rate").textContent = rate.toFixed(rate < 10 ? 1 : 0);
    drawChart();
  }
  lastSample = sample;
  showKey();
}

stats.subscribe(showKey);
inspect();
setInterval(inspect, 1000);
