// A user browsing a site: a page, two assets fetched in parallel, an API
// call, a check on each, and one second of think time. Same as
// examples/rust/browse, plus setup data: Setup returns the base URL as
// JSON and every VU receives it.
//
//	go run wload/sdk/cmd/wload-go build -o browse.wasm .
//	wload run browse.wasm --vus 1000 --duration 30s -e BASE_URL=http://127.0.0.1:8080
package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"wload/sdk/wload"
)

type browse struct {
	pageTime *wload.Trend
}

func (b *browse) Options() string { return `{"vus": 10, "duration": "10s"}` }

func (b *browse) Setup() (string, error) {
	base := strings.TrimRight(wload.Env("BASE_URL", "http://127.0.0.1:8080"), "/")
	data, err := json.Marshal(map[string]string{"base": base})
	return string(data), err
}

func (b *browse) Iteration(data string) error {
	var setup struct{ Base string }
	if err := json.Unmarshal([]byte(data), &setup); err != nil {
		return fmt.Errorf("setup data: %w", err)
	}
	base := setup.Base
	home := wload.Get(base + "/").Send()
	wload.Check("home is 200", home.Status() == 200)

	// Dynamic URLs share one `name` tag, so they form one series.
	item := (uint64(wload.VU())*7 + wload.Iteration()) % 100
	page := wload.Get(fmt.Sprintf("%s/bytes/1024?item=%d", base, item)).WithName("/bytes/1024?item={item}").Send()
	wload.Check("item page has 1024 bytes", page.BodyLen() == 1024)
	b.pageTime.AddDuration(home.Timings().Duration + page.Timings().Duration)

	// Static assets, fetched in parallel as a browser would.
	assets := wload.Batch(
		wload.Get(base+"/bytes/300").WithName("asset"),
		wload.Get(base+"/bytes/700").WithName("asset"),
	)
	wload.Check("assets arrive in order", len(assets) == 2 && assets[0].BodyLen() == 300 && assets[1].BodyLen() == 700)

	body, _ := json.Marshal(map[string]uint64{"vu": uint64(wload.VU()), "item": item})
	api := wload.Post(base + "/echo").JSON(string(body)).Send()
	var echoed struct{ Item uint64 }
	ok := api.Status() == 200 && api.JSON(&echoed) == nil && echoed.Item == item
	wload.Check("echo returns the item", ok)

	wload.Sleep(time.Second)
	return nil
}

func init() {
	wload.Register(&browse{pageTime: wload.NewTimeTrend("page_time")})
}

// main is required by the toolchains; the engine calls the exports.
func main() {}
