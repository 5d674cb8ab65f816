package admit

// PacerOption configures a Pacer.
type PacerOption interface {
	applyPacer(*pacerOptions)
}

type pacerOptions struct {
	clock Clock
}
