module github.com/admit-go/admit/browser

go 1.26.0

replace github.com/admit-go/admit => ../

require (
	github.com/admit-go/admit v0.0.0-00010101000000-000000000000
	github.com/chromedp/chromedp v0.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
