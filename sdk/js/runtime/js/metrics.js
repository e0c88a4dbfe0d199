// `import { Counter, Gauge, Rate, Trend } from 'wload/metrics'`: k6's
// custom metrics. Create them at the top level as in k6: the engine is
// asked for the metric's id on first use, so a metric made where no engine
// answers (code the SDK runs at build time) still works.

import { metrics, fields } from './host.js';

class Metric {
  constructor(name, kind, isTime) {
    if (typeof name !== 'string') throw new Error('a metric needs a name');
    this.name = name;
    this.kind = kind;
    this.isTime = Boolean(isTime);
    this.id = undefined;
  }

  add(value, tags) {
    if (this.id === undefined) {
      // result<metric-id, string>: an error arrives as a thrown value.
      try {
        this.id = metrics.define(this.name, this.kind, this.isTime);
      } catch (e) {
        const why = e && e.payload !== undefined ? e.payload : e;
        throw new Error(`cannot define metric ${JSON.stringify(this.name)}: ${why}`);
      }
    }
    metrics.add(this.id, Number(value), fields(tags));
  }
}

/** A sum: count and rate per second. */
export class Counter extends Metric {
  constructor(name) {
    super(name, 'counter', false);
  }
}
/** The last value, with min and max. */
export class Gauge extends Metric {
  constructor(name) {
    super(name, 'gauge', false);
  }
}
/** The share of truthy values. */
export class Rate extends Metric {
  constructor(name) {
    super(name, 'rate', false);
  }
  add(value, tags) {
    super.add(value ? 1 : 0, tags);
  }
}
/** A distribution; `new Trend(name, true)` holds milliseconds. */
export class Trend extends Metric {
  constructor(name, isTime) {
    super(name, 'trend', isTime);
  }
}
