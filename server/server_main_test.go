package server

import (
	"testing"

	"github.com/admit-go/admit/internal/redistest"
)

// TestMain stops the Redis servers the tests started (see redistest.Main).
func TestMain(m *testing.M) { redistest.Main(m) }
