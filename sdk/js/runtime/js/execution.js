// `import exec from 'wload/execution'`: the part of k6/execution that
// wload knows: this VU's id and iteration, and the scenario's name.

import { vu } from './host.js';

export default {
  vu: {
    get idInTest() {
      return vu.id();
    },
    get iterationInScenario() {
      return vu.iteration();
    },
  },
  scenario: {
    get name() {
      return vu.scenario();
    },
  },
};
