'use strict';
// A daemon stand-in for unit tests of the views: answers requests from a table of handlers and
// lets a test push notifications. (The integration and e2e levels use the real daemon.)
class FakeDaemon {
  constructor(handlers = {}) { this.handlers = handlers; this.calls = []; this.listeners = new Map(); }
  async request(method, params) {
    this.calls.push([method, params]);
    const h = this.handlers[method];
    if (!h) throw new Error(`no handler for ${method}`);
    return h(params);
  }
  onNotification(method, handler) {
    if (!this.listeners.has(method)) this.listeners.set(method, new Set());
    this.listeners.get(method).add(handler);
    return { dispose: () => this.listeners.get(method).delete(handler) };
  }
  notify(method, params) { for (const h of this.listeners.get(method) ?? []) h(params); }
}

/** A row as `session/view` returns it. */
function row(id, parentId, depth, extra = {}) {
  return { id, parentId, type: 'message', role: 'user', depth, prefix: '', onActivePath: false, isLeaf: false, text: `user: ${id}`, timestamp: '2026-01-01T00:00:00.000Z', ...extra };
}

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

/** A tree view's `message` that records every set in `sets` (and calls `onSet` with it). */
function messageView(sets, onSet = () => {}) {
  return {
    get message() {
      return sets.at(-1);
    },
    set message(m) {
      sets.push(m);
      onSet(m);
    },
  };
}

module.exports = { FakeDaemon, messageView, row, tick };
