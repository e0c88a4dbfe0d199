// The HTTP client's features in Go, one per mode (-e MODE=), with the same
// requests and check names as examples/rust/http_features, so that the two
// can be compared run for run:
//
//   - proto: GET ${BASE_URL}/proto; the response's Proto is
//     ${EXPECT_PROTO} and the server saw the same, TLSVersion is
//     ${EXPECT_TLS} (empty for plain HTTP).
//   - batch: a Batch of ${BATCH_N} (default 12) /bytes/i and as many
//     /delay/50; answers come back in order.
//   - redirect: /redirect/3 followed (4 hops), and with MaxRedirects(1).
//   - cookies: cookies set by the server, kept across iterations, set and
//     cleared by the test.
//   - compress: /compressed/{gzip,deflate,zstd} decoded.
//   - error: GET ${TARGET}; the error code is ${EXPECT_CODE}.
//   - expect: /status/404 expected per request (ExpectedStatuses);
//     /status/418 not.
//   - limit: MaxBodySize per request cuts /bytes/4096 (1060) and a
//     decoded gzip body (1702), alone and in a batch; without it the body
//     arrives whole.
//   - sdk: query, form, multipart and JSON bodies through /echo.
//   - keep: with --discard-response-bodies, a request that keeps its body.
//   - options: a Batch whose requests have options of their own (each
//     its request-options): one follows no redirect, one expects its
//     404, one does not.
//   - repeated: the two set-cookie fields of one response stay apart in
//     Headers, and Header is the first.
//   - lazy, metrics, groups, vu, fail: as in Rust (docs/parity.md lists
//     what each exercises).
//
// Build and run:
//
//	go run wload/sdk/cmd/wload-go build -o http_features.wasm .
//	wload run http_features.wasm --iterations 3 -e MODE=redirect -e BASE_URL=http://127.0.0.1:8080
package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"wload/sdk/wload"
)

const compressible = "wload compresses well. wload compresses well. wload compresses well. " +
	"wload compresses well. wload compresses well. wload compresses well."

type features struct{}

var (
	counter = wload.NewCounter("parity_counter")
	gauge   = wload.NewGauge("parity_gauge")
	rate    = wload.NewRate("parity_rate")
	trend   = wload.NewTimeTrend("parity_trend")
	// done counts the iterations this VU has run, kept by the test itself.
	done uint64
)

func (features) Setup() (string, error) { return `{"token":"t0k3n"}`, nil }

func (features) Iteration(data string) error {
	iter := done
	done++
	base := wload.Env("BASE_URL", "http://127.0.0.1:8080")
	url := func(path string) string { return strings.TrimRight(base, "/") + path }
	switch mode := wload.Env("MODE", "proto"); mode {
	case "proto":
		res := wload.Get(url("/proto")).Send()
		want := wload.Env("EXPECT_PROTO", "HTTP/1.1")
		wload.Check("status is 200", res.Status() == 200)
		wload.Check("proto as expected", res.Proto() == want)
		seen := "HTTP/1.1"
		if want == "HTTP/2.0" {
			seen = want
		}
		wload.Check("server saw the proto", res.Text() == seen)
		wload.Check("tls version as expected", res.TLSVersion() == wload.Env("EXPECT_TLS", ""))
		if wload.Iteration() == 0 && res.TLSVersion() != "" {
			wload.Check("handshake timed", res.Timings().TLSHandshaking > 0)
		}
	case "batch":
		n, err := strconv.Atoi(wload.Env("BATCH_N", "12"))
		if err != nil {
			return fmt.Errorf("BATCH_N: %w", err)
		}
		var reqs []*wload.Request
		for i := range n {
			reqs = append(reqs, wload.Get(url(fmt.Sprintf("/bytes/%d", 1000+i))))
		}
		for range n {
			reqs = append(reqs, wload.Get(url("/delay/50")))
		}
		res := wload.Batch(reqs...)
		all, inOrder := true, true
		for i, r := range res {
			all = all && r.Status() == 200
			inOrder = inOrder && (i >= n || r.BodyLen() == uint64(1000+i))
		}
		wload.Check("batch: all answered", all)
		wload.Check("batch: in order", inOrder)
	case "redirect":
		res := wload.Get(url("/redirect/3")).Send()
		wload.Check("redirect: followed to 200", res.Status() == 200)
		wload.Check("redirect: 4 hops counted", res.Redirects() == 4)
		wload.Check("redirect: final url", res.URL() == url("/"))
		limited := wload.Get(url("/redirect/3")).MaxRedirects(1).Send()
		wload.Check("redirect: limit stops at 302", limited.Status() == 302)
		wload.Check("redirect: limit counted", limited.Redirects() == 1)
	case "cookies":
		if wload.Iteration() == 0 {
			res := wload.Get(url("/cookies/set?session=abc&theme=dark")).Send()
			wload.Check("cookies: server saw them", strings.Contains(res.Text(), "session=abc"))
			return nil
		}
		session, _ := wload.Cookie(base, "session")
		wload.Check("cookies: kept across iterations", session == "abc")
		if err := wload.SetCookie(base, "manual=1; Path=/"); err != nil {
			return err
		}
		text := wload.Get(url("/cookies")).Send().Text()
		wload.Check("cookies: sent with own", strings.Contains(text, "session=abc") && strings.Contains(text, "manual=1"))
		wload.ClearCookies()
		wload.Check("cookies: cleared", wload.Get(url("/cookies")).Send().Text() == "")
		// Back to the state of the first iteration.
		wload.Get(url("/cookies/set?session=abc&theme=dark")).Send()
	case "compress":
		for _, alg := range []string{"gzip", "deflate", "zstd"} {
			res := wload.Get(url("/compressed/"+alg)).Header("accept-encoding", alg).Send()
			wload.Check("compress: "+alg+" decoded", res.Text() == compressible)
			wload.Check("compress: "+alg+" length is decoded", res.BodyLen() == uint64(len(compressible)))
		}
	case "error":
		ms, err := strconv.Atoi(wload.Env("TIMEOUT_MS", "2000"))
		if err != nil {
			return fmt.Errorf("TIMEOUT_MS: %w", err)
		}
		want, err := strconv.ParseUint(wload.Env("EXPECT_CODE", "0"), 10, 32)
		if err != nil {
			return fmt.Errorf("EXPECT_CODE: %w", err)
		}
		res := wload.Get(wload.Env("TARGET", base)).WithTimeout(time.Duration(ms) * time.Millisecond).Send()
		if res.ErrorCode() != uint32(want) {
			wload.Log(wload.Warn, fmt.Sprintf("got code %d (%q), expected %d", res.ErrorCode(), res.Error(), want))
		}
		wload.Check("error: code as expected", res.ErrorCode() == uint32(want))
		wload.Check("error: status 0", res.Status() == 0)
		wload.Check("error: message", res.Error() != "")
	case "expect":
		ok := wload.Get(url("/status/404")).ExpectedStatuses(wload.StatusRange{Min: 200, Max: 299}, wload.StatusRange{Min: 404, Max: 404}).Send()
		wload.Check("expect: 404 answered", ok.Status() == 404)
		bad := wload.Get(url("/status/418")).Send()
		wload.Check("expect: 418 answered", bad.Status() == 418)
	case "limit":
		cut := wload.Get(url("/bytes/4096")).MaxBodySize(1024).Send()
		wload.Check("limit: past it fails with 1060", cut.ErrorCode() == 1060)
		whole := wload.Get(url("/bytes/4096")).Send()
		wload.Check("limit: without it the body is whole", whole.ErrorCode() == 0 && len(whole.Body()) == 4096)
		// About 50 bytes on the wire, 137 once decoded.
		decoded := wload.Get(url("/compressed/gzip")).Header("accept-encoding", "gzip").MaxBodySize(100).Send()
		wload.Check("limit: decoded past it fails with 1702", decoded.ErrorCode() == 1702)
		res := wload.Batch(
			wload.Get(url("/bytes/4096")).MaxBodySize(1024),
			wload.Get(url("/bytes/4096")),
			wload.Get(url("/bytes/512")).MaxBodySize(1024),
		)
		codes := []uint32{res[0].ErrorCode(), res[1].ErrorCode(), res[2].ErrorCode()}
		wload.Check("limit: batch, each its own", slices.Equal(codes, []uint32{1060, 0, 0}))
	case "sdk":
		res := wload.Get(url("/echo")).Query("q", "a b&c").Send()
		wload.Check("sdk: query encoded", strings.HasSuffix(res.URL(), "/echo?q=a%20b%26c"))
		res = wload.Post(url("/echo")).Form([][2]string{{"name", "wl oad"}, {"x", "1&2"}}).Send()
		wload.Check("sdk: form body", res.Text() == "name=wl+oad&x=1%262")
		ct, _ := res.Header("content-type")
		wload.Check("sdk: form type", ct == "application/x-www-form-urlencoded")
		form := wload.NewMultipart().Text("a", "1").File("f", "f.txt", "text/plain", []byte("data"))
		text := wload.Post(url("/echo")).Multipart(form).Send().Text()
		wload.Check("sdk: multipart body", strings.Contains(text, "name=\"a\"\r\n\r\n1\r\n") &&
			strings.Contains(text, "filename=\"f.txt\"\r\ncontent-type: text/plain\r\n\r\ndata\r\n"))
		var back struct{ N int }
		err := wload.Post(url("/echo")).JSON(`{"n": 7}`).Send().JSON(&back)
		wload.Check("sdk: json round trip", err == nil && back.N == 7)
	case "keep":
		dropped := wload.Get(url("/bytes/100")).Send()
		wload.Check("keep: discarded by default", len(dropped.Body()) == 0 && dropped.BodyLen() == 100)
		kept := wload.Get(url("/bytes/100")).KeepBody().Send()
		wload.Check("keep: kept on request", len(kept.Body()) == 100)
	case "options":
		res := wload.Batch(
			wload.Get(url("/redirect/1")).MaxRedirects(0),
			wload.Get(url("/status/404")).ExpectedStatuses(wload.StatusRange{Min: 404, Max: 404}),
			wload.Get(url("/status/404")),
		)
		statuses := []int{res[0].Status(), res[1].Status(), res[2].Status()}
		wload.Check("options: each its own", slices.Equal(statuses, []int{302, 404, 404}))
		wload.Check("options: redirect not followed", res[0].Redirects() == 0)
	case "repeated":
		res := wload.Get(url("/cookies/set?session=abc&theme=dark")).MaxRedirects(0).Send()
		var set []string
		for _, h := range res.Headers() {
			if h[0] == "set-cookie" {
				set = append(set, h[1])
			}
		}
		wload.Check("repeated: both set-cookie fields", len(set) == 2 &&
			strings.HasPrefix(set[0], "session=abc") && strings.HasPrefix(set[1], "theme=dark"))
		first, _ := res.Header("Set-Cookie")
		wload.Check("repeated: Header is the first", first == set[0])
	case "lazy":
		n, err := strconv.ParseUint(wload.Env("LAZY_BYTES", "62914560"), 10, 64)
		if err != nil {
			return fmt.Errorf("LAZY_BYTES: %w", err)
		}
		res := wload.Get(url(fmt.Sprintf("/bytes/%d", n))).Send()
		wload.Check("lazy: answered", res.Status() == 200)
		wload.Check("lazy: length known", res.BodyLen() == n)
		wload.Check("lazy: timed", res.Timings().Duration > 0)
		if wload.Env("READ", "") == "1" {
			wload.Check("lazy: body read", uint64(len(res.Body())) == n)
		}
	case "metrics":
		counter.AddTagged(1, [][2]string{{"kind", "a"}})
		counter.Add(2)
		gauge.Set(float64(iter + 1))
		rate.AddTagged(true, [][2]string{{"kind", "a"}})
		rate.Add(false)
		rate.Add(true)
		trend.AddTagged(10, [][2]string{{"kind", "a"}})
		trend.Add(20)
		wload.Check("metrics: recorded", true)
	case "groups":
		wload.Group("outer", func() {
			wload.Check("groups: outer answered", wload.Get(url("/bytes/10")).Send().BodyLen() == 10)
			wload.Group("inner", func() {
				wload.Check("groups: inner answered", wload.Get(url("/bytes/20")).Send().BodyLen() == 20)
			})
		})
		wload.Check("groups: outside", true)
	case "vu":
		wload.Check("vu: id", wload.VU() >= 1)
		wload.Check("vu: iteration", wload.Iteration() == iter)
		wload.Check("vu: scenario", wload.Scenario() == "default")
		wload.Check("vu: env", wload.Env("PARITY", "") == "yes")
		wload.Check("vu: env unset", wload.Env("PARITY_UNSET", "unset") == "unset")
		wload.Check("vu: setup data", strings.Contains(data, `"token":"t0k3n"`))
		wload.Log(wload.Info, fmt.Sprintf("parity: vu %d iteration %d", wload.VU(), iter))
		wload.Sleep(10 * time.Millisecond)
	case "fail":
		if iter%2 == 1 {
			return fmt.Errorf("parity: deliberate failure")
		}
		wload.Check("fail: passing iteration", true)
	default:
		return fmt.Errorf("unknown MODE %q", mode)
	}
	return nil
}

func init() { wload.Register(features{}) }

// main is required by the toolchains; the engine calls the exports.
func main() {}
