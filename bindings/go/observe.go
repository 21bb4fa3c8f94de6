package omprpc

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"
)

// Counters are the library's per-client counters (docs/c-api.md, omprpc_client_counters).
// Each is exact on its own; a snapshot of several is not one instant.
type Counters struct {
	FramesIn        uint64 `json:"frames_in"`
	BytesIn         uint64 `json:"bytes_in"`
	FramesOut       uint64 `json:"frames_out"`
	BytesOut        uint64 `json:"bytes_out"`
	RequestsSent    uint64 `json:"requests_sent"`
	Responses       uint64 `json:"responses"`
	RequestsPending uint64 `json:"requests_pending"`
	ProtocolErrors  uint64 `json:"protocol_errors"`
	UIRequests      uint64 `json:"ui_requests"`
	EventsQueued    uint64 `json:"events_queued"`
	EventsDelivered uint64 `json:"events_delivered"`
	// EventsDropped counts every event dropped, by the library's queue or by this package
	// (BindingEventsDropped); each drop was reported by an event_overflow event.
	EventsDropped uint64 `json:"events_dropped"`
	// BindingEventsDropped counts the events this package dropped: a subscriber's backlog, or
	// the events kept while nobody subscribed, past their bound (event_queue_capacity).
	// Not in Raw.
	BindingEventsDropped uint64 `json:"-"`
	EventsHeld           uint64 `json:"events_held"`
	EventsHeldBytes      uint64 `json:"events_held_bytes"`
	// TimeToFirstEventMs is from start to the first event queued; nil until there is one.
	TimeToFirstEventMs *float64 `json:"time_to_first_event_ms"`
	// LastPromptFirstEventMs is from the last prompt's send to its first session event.
	LastPromptFirstEventMs *float64 `json:"last_prompt_first_event_ms"`
	UptimeMs               uint64   `json:"uptime_ms"`
	Closed                 bool     `json:"closed"`
	// Raw is the whole object, counters this struct does not name included.
	Raw json.RawMessage `json:"-"`
}

// LogRecord is one record of the library's log channel. Fields holds the record's other
// members (type, id, latency_ms, argv …) in Raw.
type LogRecord struct {
	Level   string `json:"level"`   // "error", "warn", "info", "debug" or "trace"
	Target  string `json:"target"`  // "omprpc::spawn", "omprpc::request", …
	Message string `json:"message"` // never a prompt, a system prompt, params or an env value
	TMs     int64  `json:"t_ms"`    // milliseconds since the Unix epoch
	Client  uint64 `json:"client"`  // which client of this process
	// Raw is the whole record.
	Raw json.RawMessage `json:"-"`
}

// Time is the record's wall-clock time.
func (r LogRecord) Time() time.Time { return time.UnixMilli(r.TMs) }

// SlogLevel maps the record's level to slog's (trace is below Debug).
func (r LogRecord) SlogLevel() slog.Level {
	switch r.Level {
	case "error":
		return slog.LevelError
	case "warn":
		return slog.LevelWarn
	case "info":
		return slog.LevelInfo
	case "debug":
		return slog.LevelDebug
	default:
		return slog.LevelDebug - 4
	}
}

// ForwardLogs hands every log record to logger (on this goroutine: the library never calls
// into Go) until ctx ends or the client closes; it returns nil then, or the error that
// stopped it. The record's members other than level, message and t_ms are slog attributes.
// Typical use: go c.ForwardLogs(ctx, slog.Default()).
func (c *Client) ForwardLogs(ctx context.Context, logger *slog.Logger) error {
	for {
		recs, err := c.Logs(ctx, 256)
		if err != nil {
			if errors.Is(err, ErrClosed) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, r := range recs {
			level := r.SlogLevel()
			if !logger.Enabled(ctx, level) {
				continue
			}
			var members map[string]any
			_ = json.Unmarshal(r.Raw, &members)
			attrs := make([]slog.Attr, 0, len(members))
			for k, v := range members {
				if k != "level" && k != "message" && k != "t_ms" {
					attrs = append(attrs, slog.Any(k, v))
				}
			}
			rec := slog.NewRecord(r.Time(), level, r.Message, 0)
			rec.AddAttrs(attrs...)
			_ = logger.Handler().Handle(ctx, rec)
		}
	}
}
