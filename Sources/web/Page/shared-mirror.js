// SharedMirror in a browser tab: the client side of PROTOCOL.md over the web front's WebSocket
// framing ({"request": [...]} out, {"reply": [...]} and {"published": [...]} in). A tab is a
// client of its own: its own client id and write ids, mutations kept until the broker confirms
// them, rebased onto what others wrote and sent again after a REJECT, and exactly once across a
// lost connection or a broker restart (a snapshot's lastWrite says whether a write in flight was
// applied), and a broker that lost its data gets the tab's confirmed copy back (SEED).

// Version 4: a tab writes with WRITE and waits for its ACK, so it needs nothing of version 5
// (WRITEQ), and a broker of either version welcomes it.
const PROTOCOL_VERSION = "4";
/// How many of a key's latest writers a tab remembers for the copy it offers (the broker's own
/// bound, BrokerMessage.recentWriters).
const RECENT_WRITERS = 64;

/// JSON as the Swift programs write it (sorted keys), so that equal values are equal bytes.
function encode(value) {
  if (Array.isArray(value)) return `[${value.map(encode).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const fields = Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${encode(value[k])}`);
    return `{${fields.join(",")}}`;
  }
  return JSON.stringify(value);
}

function clone(value) {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

/// One mirrored key: `value` is the broker's confirmed value with this tab's pending mutations
/// applied; `pending` counts the mutations the broker has not confirmed yet.
class SharedKey {
  constructor(mirror, name, initial) {
    this.mirror = mirror;
    this.name = name;
    this.initial = clone(initial);
    // The broker's value, as the broker instance `instance` confirmed it (`text` is its JSON,
    // the copy SEED offers).
    this.confirmed = { version: 0, value: clone(initial), text: null };
    this.instance = null;
    this.mutations = []; // {sequence, mutate}
    this.inFlight = null; // {write, base, through, value}
    // Writes that were in flight when an answer showed them not applied: a copy of an earlier
    // broker run, adopted later, may still hold them (oldest first).
    this.unresolved = [];
    // The last write id of each recent writer whose write the confirmed value holds.
    this.writers = new Map();
    this.phase = "idle"; // idle, syncing, getting, ready
    this.buffered = []; // updates that came before the snapshot
    this.listeners = new Set();
    this.retry = null;
    // The broker refused this tab's writes of the key (forbidden): how many mutations were
    // undone, and until when new ones are refused here at once.
    this.readOnly = false;
    this.refusedCount = 0;
    this.refusingUntil = 0;
  }

  get value() {
    const value = clone(this.confirmed.value);
    let result = value;
    for (const { mutate } of this.mutations) result = mutate(result) ?? result;
    return result;
  }

  get pending() {
    return this.mutations.length;
  }

  get version() {
    return this.confirmed.version;
  }

  /// Whether a broker has told this tab the key's value yet: until then `value` is the initial
  /// value with this tab's taps on it, not the count the others see.
  get synced() {
    return this.instance !== null;
  }

  /// Mutates the value: `mutate` gets a copy and changes it in place (or returns a new value). It
  /// runs again on every newer value the broker confirms until its write is confirmed.
  withLock(mutate) {
    if (performance.now() < this.refusingUntil) {
      // The broker just refused this tab's writes: refused at once, not left pending.
      this.refusedCount += 1;
      this.changed();
      return;
    }
    this.mutations.push({ sequence: this.mirror.nextSequence++, mutate });
    this.changed();
    this.flush();
  }

  /// Calls `listener(value, key)` now and after every change; returns a function that stops it.
  subscribe(listener) {
    this.listeners.add(listener);
    listener(this.value, this);
    return () => this.listeners.delete(listener);
  }

  changed() {
    const value = this.value;
    for (const listener of this.listeners) listener(value, this);
    this.mirror.changed();
  }

  // The connection's steps.

  startSync() {
    clearTimeout(this.retry);
    this.phase = "syncing";
    this.buffered = [];
    this.mirror.send(["SYNC", this.mirror.clientID, this.name]);
    // A SYNC that overtook the subscription is never answered: ask again.
    this.retry = setTimeout(() => this.phase === "syncing" && this.startSync(), 500);
  }

  /// Asks for the key's state: to a broker instance other than the one that confirmed this
  /// tab's copy (it may have lost the key), by offering that copy (SEED); otherwise GET.
  ask() {
    clearTimeout(this.retry);
    this.phase = "getting";
    const { version, text } = this.confirmed;
    if (this.instance && this.instance !== this.mirror.instance && version > 0 && text !== null) {
      const pairs = [...this.writers].flatMap(([client, write]) => [client, String(write)]);
      this.mirror.send(["SEED", this.mirror.clientID, this.name, this.instance, String(version), text, ...pairs]);
    } else {
      this.mirror.send(["GET", this.mirror.clientID, this.name]);
    }
  }

  /// Remembers that `client`'s write `write` is in the value, the latest writer last.
  record(client, write) {
    if (write <= 0) return;
    const known = this.writers.get(client) ?? 0;
    this.writers.delete(client);
    this.writers.set(client, Math.max(known, write));
    if (this.writers.size > RECENT_WRITERS) this.writers.delete(this.writers.keys().next().value);
  }

  lost() {
    clearTimeout(this.retry);
    this.phase = "idle";
  }

  flush() {
    if (!this.mirror.connected || this.phase !== "ready" || this.inFlight || !this.mutations.length) {
      return;
    }
    const value = this.value;
    const write = this.mirror.nextWrite++;
    this.inFlight = {
      write,
      base: this.confirmed.version,
      through: this.mutations[this.mutations.length - 1].sequence,
      value,
    };
    this.mirror.send(["WRITE", this.mirror.clientID, String(write), this.name, String(this.confirmed.version), encode(value)]);
  }

  /// The mutations the write in flight carried are confirmed.
  confirmInFlight() {
    this.confirmThrough(this.inFlight.through);
    this.inFlight = null;
  }

  confirmThrough(sequence) {
    this.mutations = this.mutations.filter((m) => m.sequence > sequence);
  }

  /// The broker applied this tab's own write `write`: the unresolved writes before it can never
  /// be applied now (the broker's record of this tab's last write is past them).
  applied(write) {
    // A write went through: what the broker refused before is over.
    this.mirror.problem = null;
    this.readOnly = false;
    this.record(this.mirror.clientID, write);
    this.confirmInFlight();
    this.unresolved = this.unresolved.filter((sent) => sent.write > write);
  }

  /// The broker's state, from a SNAPSHOT or a REJECT: the writes up to `lastWrite` are applied,
  /// later ones are not (now; a copy adopted later may still bring them, so they stay unresolved
  /// while their mutations go again under new ids). From another broker instance than the one
  /// that confirmed this tab's copy, the value is taken whatever its version.
  take(version, lastWrite, valueText, pairs) {
    if (this.inFlight) this.unresolved.push(this.inFlight);
    this.inFlight = null;
    const covered = this.unresolved.filter((sent) => sent.write <= lastWrite);
    if (covered.length) this.confirmThrough(covered[covered.length - 1].through);
    this.unresolved = this.unresolved.filter((sent) => sent.write > lastWrite);
    if (this.instance !== this.mirror.instance || version >= this.confirmed.version) {
      this.instance = this.mirror.instance;
      this.confirmed =
        version === 0
          ? { version, value: clone(this.initial), text: null }
          : { version, value: JSON.parse(valueText), text: valueText };
      for (let i = 0; i + 1 < pairs.length; i += 2) this.record(pairs[i], Number(pairs[i + 1]));
    }
  }

  snapshot(version, lastWrite, valueText, pairs) {
    clearTimeout(this.retry);
    this.take(version, lastWrite, valueText, pairs);
    this.phase = "ready";
    const buffered = this.buffered;
    this.buffered = [];
    for (const update of buffered) this.update(...update);
    this.changed();
    this.flush();
  }

  update(version, client, write, valueText) {
    if (this.phase !== "ready") {
      if (this.phase === "getting" || this.phase === "syncing") this.buffered.push([version, client, write, valueText]);
      return;
    }
    if (version <= this.confirmed.version) {
      this.record(client, write);
      return;
    }
    // Missed one, or a copy was adopted that may hold a write of ours no answer accounted for:
    // a snapshot brings the value with its writers.
    if (version > this.confirmed.version + 1 || (write === 0 && this.unresolved.length)) {
      this.ask();
      return;
    }
    this.confirmed = { version, value: JSON.parse(valueText), text: valueText };
    this.record(client, write);
    if (this.inFlight && client === this.mirror.clientID && write === this.inFlight.write) this.applied(write);
    this.changed();
    this.flush();
  }

  ack(write, version) {
    if (!this.inFlight || write !== this.inFlight.write) return;
    if (version > this.confirmed.version) {
      const { value } = this.inFlight;
      this.confirmed = { version, value, text: encode(value) };
    }
    this.applied(write);
    this.changed();
    this.flush();
  }

  reject(write, version, lastWrite, valueText, pairs) {
    if (!this.inFlight || write !== this.inFlight.write) return;
    this.take(version, lastWrite, valueText, pairs);
    this.changed();
    this.flush();
  }

  refused(code, write) {
    if (write && this.inFlight && write === this.inFlight.write) {
      if (code === "forbidden") {
        // This tab's key may not write the key: waiting cannot change that, so the taps are
        // undone, and later ones refused at once until the retry, which goes to the broker (a
        // permission granted meanwhile takes effect).
        this.inFlight = null;
        this.refusedCount += this.mutations.length;
        this.mutations = [];
        this.readOnly = true;
        this.refusingUntil = performance.now() + 500;
        this.changed();
        return;
      }
      if (code === "too-large") {
        // It can never be stored: its mutations are dropped, and the tab hears why.
        this.confirmInFlight();
        this.changed();
        return;
      }
      this.inFlight = null; // not applied (storage, seeding): sent again shortly
    }
    clearTimeout(this.retry);
    this.retry = setTimeout(() => {
      if (this.phase === "getting") this.ask();
      else this.flush();
    }, 200);
  }
}

/// A tab's connection to the broker through the web front.
export class SharedMirror {
  constructor(url = SharedMirror.defaultURL(), { heartbeat = 500, missedHeartbeats = 3 } = {}) {
    this.url = url;
    this.heartbeat = heartbeat;
    this.missedHeartbeats = missedHeartbeats;
    this.clientID = `web-${crypto.randomUUID()}`;
    this.nextWrite = 1;
    this.nextSequence = 1;
    this.keys = new Map();
    this.connected = false;
    this.instance = null;
    this.lastHeard = 0;
    this.state = "connecting";
    this.listeners = new Set();
    this.problem = null;
    this.open();
    this.timer = setInterval(() => this.tick(), heartbeat);
    // Taps the broker has not confirmed live only in this tab: leaving it loses them, as
    // quitting a terminal program does, so the browser asks first.
    addEventListener("beforeunload", (event) => {
      if (this.pending > 0) event.preventDefault();
    });
  }

  static defaultURL() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${location.host}/ws`;
  }

  /// Why the broker would refuse `name` as a key (PROTOCOL.md: 1 to 256 bytes of UTF-8, no
  /// control characters), or `null` for a key it takes.
  static keyProblem(name) {
    const bytes = new TextEncoder().encode(name).length;
    if (bytes >= 1 && bytes <= 256 && !/[\u0000-\u001f\u007f-\u009f]/.test(name)) return null;
    return `a key is 1 to 256 bytes of UTF-8 without control characters, not "${name}"`;
  }

  /// The mirrored key `name`, starting at `initial` until the broker's value arrives. Throws
  /// for a name the broker would refuse (see `keyProblem`).
  key(name, initial) {
    const problem = SharedMirror.keyProblem(name);
    if (problem) throw new Error(problem);
    let key = this.keys.get(name);
    if (!key) {
      key = new SharedKey(this, name, initial);
      this.keys.set(name, key);
      if (this.connected) key.startSync();
    }
    return key;
  }

  /// Calls `listener(mirror)` whenever the connection or any key changes.
  subscribe(listener) {
    this.listeners.add(listener);
    listener(this);
    return () => this.listeners.delete(listener);
  }

  get pending() {
    let count = 0;
    for (const key of this.keys.values()) count += key.pending;
    return count;
  }

  /// Whether the broker refused this tab's last writes of a key (its key may only read it).
  get readOnly() {
    for (const key of this.keys.values()) if (key.readOnly) return true;
    return false;
  }

  /// How many mutations the broker refused (forbidden), which were undone.
  get refused() {
    let count = 0;
    for (const key of this.keys.values()) count += key.refusedCount;
    return count;
  }

  changed() {
    for (const listener of this.listeners) listener(this);
  }

  setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.changed();
  }

  open() {
    this.socket = new WebSocket(this.url);
    this.socket.onopen = () => this.hello();
    this.socket.onmessage = (event) => this.receive(event.data);
    this.socket.onclose = () => {
      this.lose("disconnected");
      setTimeout(() => this.open(), 500);
    };
  }

  send(frames) {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify({ request: frames }));
  }

  hello() {
    this.lastHeard = performance.now();
    this.helloSent = performance.now();
    this.send(["HELLO", PROTOCOL_VERSION, this.clientID]);
  }

  lose(state) {
    this.connected = false;
    for (const key of this.keys.values()) key.lost();
    this.setState(state);
  }

  tick() {
    if (this.socket.readyState !== WebSocket.OPEN) return;
    const now = performance.now();
    if (this.connected) {
      if (now - this.lastHeard > this.heartbeat * this.missedHeartbeats) {
        this.lose("disconnected");
        this.hello();
        return;
      }
      const held = [];
      for (const key of this.keys.values()) if (key.phase === "ready") held.push(key.name, String(key.version));
      this.send(["PING", ...held]);
    } else if (now - this.helloSent >= this.heartbeat) {
      this.hello();
    }
  }

  receive(text) {
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    this.lastHeard = performance.now();
    if (Array.isArray(message.reply)) this.reply(message.reply);
    else if (Array.isArray(message.published)) this.published(message.published);
  }

  reply([command, ...fields]) {
    const key = (name) => this.keys.get(name);
    switch (command) {
      case "WELCOME": {
        const [, instance] = fields;
        this.instance = instance;
        this.connected = true;
        this.problem = null;
        this.setState("connected");
        for (const k of this.keys.values()) k.startSync();
        break;
      }
      case "PONG": {
        const [instance, ...behind] = fields;
        if (this.instance && instance !== this.instance) {
          // The broker restarted: say HELLO to the new instance and sync again.
          this.lose("syncing");
          this.hello();
          break;
        }
        for (let i = 0; i + 1 < behind.length; i += 2) {
          const k = key(behind[i]);
          if (k && k.phase === "ready") k.ask();
        }
        break;
      }
      case "SNAPSHOT": {
        const [name, version, lastWrite, value, ...pairs] = fields;
        key(name)?.snapshot(Number(version), Number(lastWrite), value, pairs);
        break;
      }
      case "ACK": {
        const [name, write, version] = fields;
        key(name)?.ack(Number(write), Number(version));
        break;
      }
      case "REJECT": {
        const [name, write, version, lastWrite, value, ...pairs] = fields;
        key(name)?.reject(Number(write), Number(version), Number(lastWrite), value, pairs);
        break;
      }
      case "ERROR": {
        const [code, text, name, write] = fields;
        // A broker collecting copies after a restart (seeding) only asks to wait, and one that
        // does not know this tab (hello: new, restarted, or another of the cluster) to say
        // HELLO: neither refuses a tap, and the pending count already says that taps wait.
        if (code !== "seeding" && code !== "hello") this.problem = `${code}: ${text}`;
        if (code === "hello") {
          this.lose("syncing");
          this.hello();
        } else if (code === "unavailable") {
          this.lose("disconnected");
        } else if (name) {
          key(name)?.refused(code, Number(write ?? 0));
        }
        this.changed();
        break;
      }
    }
  }

  published([topic, kind, ...fields]) {
    // A key's topic is the key and a NUL.
    if (!topic.endsWith("\u0000")) return;
    const k = this.keys.get(topic.slice(0, -1));
    if (!k) return;
    if (kind === "SYNCED" && fields[0] === this.clientID && k.phase === "syncing") k.ask();
    else if (kind === "UPDATE") {
      const [version, client, write, value] = fields;
      k.update(Number(version), client, Number(write), value);
    }
  }
}
