package lua_test

import (
	"testing"

	"github.com/admit-go/admit/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
