package bot

import "errors"

// ErrUnauthorized is returned (wrapped) by the host adapters' ParseWebhook when a
// delivery's signature or token is missing or wrong. The server maps it to 401 and
// never enqueues the delivery, so one sentinel keeps that check host-neutral.
var ErrUnauthorized = errors.New("webhook authentication failed")
