package incluster

import (
	"testing"

	"github.com/sbxdev/sbx/internal/k8stest"
)

func TestMain(m *testing.M) { k8stest.Main(m) }
