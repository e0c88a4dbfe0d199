// Custom metrics: counters, gauges, rates and trends. Create them at the
// top level; the engine is asked for the metric on first use.

import * as wit from "./bindings";
import { RET, FieldList, utf8, liftStringAt } from "./abi";

class Metric {
  private id: i32 = -1;

  constructor(public name: string, private kind: i32, private isTime: bool) {}

  /** The engine's id of this metric, defined on first use. */
  private ensure(): i32 {
    if (this.id < 0) {
      const n = utf8(this.name);
      wit.define(changetype<usize>(n), n.byteLength, this.kind, this.isTime ? 1 : 0, RET);
      if (load<u8>(RET) != 0) {
        const why = liftStringAt(RET + 4);
        abort(`cannot define metric ${this.name}: ${why}`);
      }
      this.id = load<i32>(RET, 4);
    }
    return this.id;
  }

  protected record(value: f64): void {
    wit.add(this.ensure(), value, 0, 0);
  }

  /** Record `value` with tags `keys[i]=values[i]`. */
  recordTagged(value: f64, keys: string[], values: string[]): void {
    const id = this.ensure();
    const tags = new FieldList(keys, values);
    wit.add(id, value, tags.ptr, tags.len);
    tags.free();
  }
}

/** A sum: count and rate per second. */
export class Counter extends Metric {
  constructor(name: string) {
    super(name, 0, false);
  }
  add(value: f64): void {
    this.record(value);
  }
}

/** The last value set, with min and max. */
export class Gauge extends Metric {
  constructor(name: string) {
    super(name, 1, false);
  }
  set(value: f64): void {
    this.record(value);
  }
}

/** The share of true outcomes. */
export class Rate extends Metric {
  constructor(name: string) {
    super(name, 2, false);
  }
  add(ok: bool): void {
    this.record(ok ? 1 : 0);
  }
}

/** A distribution; `new Trend(name, true)` holds milliseconds. */
export class Trend extends Metric {
  constructor(name: string, isTime: bool = false) {
    super(name, 3, isTime);
  }
  add(value: f64): void {
    this.record(value);
  }
}
