package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/admit-go/admit/server"
)

// A Server built from a Config: every zero field holds its default (the
// built-in policy, in memory), so only what differs is written.
func ExampleNew() {
	srv, err := server.New(server.Config{
		HTTPAddr: "127.0.0.1:0", // a free port
		GRPCAddr: "off",
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := srv.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown(context.Background())

	body := `{"domain":"api","descriptors":[{"entries":[{"key":"generic_key","value":"demo"}]}]}`
	resp, err := http.Post("http://"+srv.HTTPAddr().String()+"/v1/check", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)

	// A Config that Validate refuses names its field.
	err = server.Config{Redis: "ftp://cache:6379"}.Validate()
	fmt.Println(err)
	// Output:
	// 200 OK
	// admit: invalid config: server: Config.Redis: invalid Redis URL: unknown scheme "ftp": want redis, rediss, unix, redis+sentinel, rediss+sentinel, redis+cluster or rediss+cluster
}
