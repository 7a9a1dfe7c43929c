// The page: the counter and the profile of the SharedState case study, on one shared key.
import { SharedMirror } from "/shared-mirror.js";

const parameters = new URLSearchParams(location.search);
const element = (id) => document.getElementById(id);
const name = parameters.get("key") ?? "stats";
element("key").textContent = `key: ${name}`;
const mirror = new SharedMirror();
let stats;
try {
  stats = mirror.key(name, { count: 0, maxCount: 0, minCount: 0, numberOfCounts: 0 });
} catch (error) {
  // A key the broker would refuse: the page says so rather than count taps that never go out.
  element("problem").textContent = `?key= ${error.message}`;
  element("problem").hidden = false;
  for (const button of document.querySelectorAll("button")) button.disabled = true;
  throw error;
}
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
  element("alert-text").textContent = isPrime(count) ? `👍 The number ${count} is prime!` : `👎 The number ${count} is not prime :(`;
  element("alert").showModal();
};

stats.subscribe((value) => {
  element("count").textContent = value.count;
  element("profile-count").textContent = value.count;
  element("max").textContent = value.maxCount;
  element("min").textContent = value.minCount;
  element("taps").textContent = value.numberOfCounts;
});

mirror.subscribe(() => {
  const connection = element("connection");
  connection.dataset.state = mirror.state;
  connection.textContent = mirror.state;
  // What the broker refused last (a key or value it does not take, a store it cannot reach),
  // until a write goes through again.
  const problem = element("problem");
  problem.hidden = !mirror.problem;
  problem.textContent = mirror.problem ? `The broker refused: ${mirror.problem}` : "";
  const pending = element("pending");
  const waiting = mirror.pending;
  pending.hidden = waiting === 0;
  pending.textContent = waiting === 1 ? "1 tap waits for the broker" : `${waiting} taps wait for the broker`;
});
