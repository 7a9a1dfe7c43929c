// The page: the counter and the profile of the SharedState case study, on one shared key.
import { SharedMirror } from "/shared-mirror.js";

const parameters = new URLSearchParams(location.search);
const mirror = new SharedMirror();
const stats = mirror.key(parameters.get("key") ?? "stats", { count: 0, maxCount: 0, minCount: 0, numberOfCounts: 0 });
window.sharedMirror = mirror;
window.stats = stats;

const element = (id) => document.getElementById(id);

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
  connection.textContent = mirror.problem && mirror.state !== "connected" ? `${mirror.state} · ${mirror.problem}` : mirror.state;
  const pending = element("pending");
  const waiting = mirror.pending;
  pending.hidden = waiting === 0;
  pending.textContent = waiting === 1 ? "1 tap waits for the broker" : `${waiting} taps wait for the broker`;
});
