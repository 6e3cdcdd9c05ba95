package entry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ConsumePath is the server's endpoint that spends a token once.
const ConsumePath = "/api/v1/tokens/consume"

// Consumer spends entry tokens through a waitroom server's consume
// endpoint, authenticated by a service key. Safe for concurrent use.
type Consumer struct {
	url    string
	auth   string
	client *http.Client
}

// NewConsumer returns a Consumer of the server at baseURL (scheme, host and
// any path prefix, such as https://queue.example.com) with serviceKey. A
// nil client means one with a 5 s timeout.
func NewConsumer(baseURL, serviceKey string, client *http.Client) *Consumer {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	return &Consumer{url: strings.TrimRight(baseURL, "/") + ConsumePath, auth: "Bearer " + serviceKey, client: client}
}

// APIError is the server's refusal: its HTTP status, stable code
// (token_used, invalid_token, too_early, token_expired, missing_visitor,
// wrong_visitor, invalid_service_key, …) and message.
type APIError struct {
	Status  int
	Code    string
	Message string
	WaitMs  int64 // for too_early
}

func (e *APIError) Error() string { return "entry: consume: " + e.Code + ": " + e.Message }

// Consumed is the server's answer to a first use.
type Consumed struct {
	Room      string    `json:"room"`
	Visitor   string    `json:"visitor"`
	ID        string    `json:"jti"`
	NotBefore time.Time `json:"notBefore"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Consume spends token at the server, exactly once across all its
// instances. visitor is the visitor credential the token came with: the
// server refuses a token without it (401 missing_visitor) or with another
// visitor's (403 wrong_visitor). It returns an *APIError when the server
// refused, another error when it could not be asked.
func (c *Consumer) Consume(ctx context.Context, token, visitor string) (Consumed, error) {
	return c.consume(ctx, consumeRequest{Token: token, Visitor: visitor})
}

// ConsumeWithoutVisitor is Consume for a service that cannot forward the
// visitor credential: the server spends the token for whoever sent it.
// Prefer Consume; a token alone can be handed over or resold.
func (c *Consumer) ConsumeWithoutVisitor(ctx context.Context, token string) (Consumed, error) {
	return c.consume(ctx, consumeRequest{Token: token, AllowMissingVisitor: true})
}

// consumeRequest is the body of a consume call.
type consumeRequest struct {
	Token               string `json:"token"`
	Visitor             string `json:"visitor,omitempty"`
	AllowMissingVisitor bool   `json:"allowMissingVisitor,omitempty"`
}

func (c *Consumer) consume(ctx context.Context, r consumeRequest) (Consumed, error) {
	body, _ := json.Marshal(r)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return Consumed{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", c.auth)
	resp, err := c.client.Do(req)
	if err != nil {
		return Consumed{}, fmt.Errorf("entry: consume: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return Consumed{}, fmt.Errorf("entry: consume: %w", err)
	}
	if resp.StatusCode == http.StatusOK {
		var out Consumed
		if err := json.Unmarshal(data, &out); err != nil {
			return Consumed{}, fmt.Errorf("entry: consume: %w", err)
		}
		return out, nil
	}
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			WaitMs  int64  `json:"waitMs"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil || e.Error.Code == "" {
		return Consumed{}, fmt.Errorf("entry: consume: %s", resp.Status)
	}
	return Consumed{}, &APIError{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message, WaitMs: e.Error.WaitMs}
}
