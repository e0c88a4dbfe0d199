// A shopper, in groups: `home`, then `cart` with `add` and `view` nested
// inside it. Every request and check carries its group's path as the
// `group` tag (`::cart::add`), each group's time is a `group_duration`
// sample, and the summary lists the checks under their groups. Same as
// examples/rust/shop.
//
//	go run wload/sdk/cmd/wload-go build -o shop.wasm .
//	wload run shop.wasm --vus 10 --duration 30s -e BASE_URL=http://127.0.0.1:8080
package main

import (
	"fmt"
	"strings"

	"wload/sdk/wload"
)

type shop struct{}

func (shop) Iteration(string) error {
	base := strings.TrimRight(wload.Env("BASE_URL", "http://127.0.0.1:8080"), "/")
	wload.Group("home", func() {
		home := wload.Get(base + "/").Send()
		wload.Check("home is 200", home.Status() == 200)
	})
	wload.Group("cart", func() {
		wload.Group("add", func() {
			for _, item := range []int{3, 7} {
				res := wload.Post(base + "/echo").JSON(fmt.Sprintf(`{"item":%d}`, item)).Send()
				wload.Check("item added", res.Status() == 200)
			}
		})
		wload.Group("view", func() {
			cart := wload.Get(base + "/bytes/100").Send()
			wload.Check("cart has 100 bytes", cart.BodyLen() == 100)
		})
	})
	wload.Check("visit complete", true)
	return nil
}

func init() { wload.Register(shop{}) }

// main is required by the toolchains; the engine calls the exports.
func main() {}
