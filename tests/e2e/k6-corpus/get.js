// The smallest k6 test: one GET per iteration to a fixed host, no options.
import http from 'k6/http';

export default function () {
  http.get('http://test.k6.local/');
}
