package deploy

import (
	"errors"
	"fmt"

	"github.com/raygw/raygw/internal/engine/vllm"
	"github.com/raygw/raygw/internal/routing"
)

var routingRequest routing.Request

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func errorsAs(err error, target any) bool { return errors.As(err, target) }

type loraT = vllmLoRA
type vllmLoRA = vllm.LoRAModule

func fmtInts(v []int) string { return fmt.Sprint(v) }
