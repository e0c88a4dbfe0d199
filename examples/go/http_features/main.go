// The HTTP client's features in Go, one per mode (-e MODE=), with the same
// requests and check names as examples/rust/http_features, so that the two
// can be compared run for run: proto, redirect (followed, and
// MaxRedirects(1)), cookies (kept across iterations, set and cleared by
// the test), expect (ExpectedStatuses per request) and limit (MaxBodySize
// per request, past which a body fails with 1060, or 1702 once decoded).
//
//	go run wload/sdk/cmd/wload-go build -o http_features.wasm .
//	wload run http_features.wasm --iterations 3 -e MODE=redirect -e BASE_URL=http://127.0.0.1:8080
package main

import (
	"fmt"
	"slices"
	"strings"

	"wload/sdk/wload"
)

type features struct{}

func (features) Iteration(string) error {
	base := wload.Env("BASE_URL", "http://127.0.0.1:8080")
	url := func(path string) string { return strings.TrimRight(base, "/") + path }
	switch mode := wload.Env("MODE", "proto"); mode {
	case "proto":
		res := wload.Get(url("/proto")).Send()
		wload.Check("status is 200", res.Status() == 200)
		wload.Check("proto as expected", res.Proto() == wload.Env("EXPECT_PROTO", "HTTP/1.1"))
		wload.Check("server saw the proto", res.Text() == "HTTP/1.1")
		wload.Check("tls version as expected", res.TLSVersion() == wload.Env("EXPECT_TLS", ""))
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
	default:
		return fmt.Errorf("unknown MODE %q", mode)
	}
	return nil
}

func init() { wload.Register(features{}) }

// main is required by the toolchains; the engine calls the exports.
func main() {}
