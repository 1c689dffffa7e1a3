package helm

import (
	"testing"

	"github.com/nodeplug/nodeplug/test/integration/framework"
)

func TestMain(m *testing.M) { framework.EtcdMain(m) }
