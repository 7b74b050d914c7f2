package main

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// slogFor bridges the zap logger to the *slog.Logger exporter-toolkit wants.
// This is the one place the two meet.
func slogFor(l *zap.Logger) *slog.Logger { return slog.New(&zapHandler{l: l}) }

type zapHandler struct {
	l      *zap.Logger
	fields []zap.Field
	group  string
}

func (h *zapHandler) Enabled(_ context.Context, lvl slog.Level) bool {
	return h.l.Core().Enabled(zapLevel(lvl))
}

func (h *zapHandler) Handle(_ context.Context, r slog.Record) error {
	fields := append([]zap.Field{}, h.fields...)
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, h.field(a))
		return true
	})
	if ce := h.l.Check(zapLevel(r.Level), r.Message); ce != nil {
		ce.Write(fields...)
	}
	return nil
}

func (h *zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := *h
	n.fields = append(append([]zap.Field{}, h.fields...), make([]zap.Field, 0, len(attrs))...)
	for _, a := range attrs {
		n.fields = append(n.fields, h.field(a))
	}
	return &n
}

func (h *zapHandler) WithGroup(name string) slog.Handler {
	n := *h
	if n.group != "" {
		name = n.group + "." + name
	}
	n.group = name
	return &n
}

func (h *zapHandler) field(a slog.Attr) zap.Field {
	key := a.Key
	if h.group != "" {
		key = h.group + "." + key
	}
	return zap.Any(key, a.Value.Resolve().Any())
}

func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	case l >= slog.LevelInfo:
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}
