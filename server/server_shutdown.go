package server

// Stopping the Server: Shutdown, which drains requests in flight, and Close.

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Shutdown stops the Server gracefully: /readyz answers 503 at once, the
// listeners stop accepting connections, and the requests in flight (HTTP,
// gateway, gRPC) are given until ctx's deadline to finish; those still
// running then are cut off and Shutdown returns an error wrapping
// ErrShutdownTimeout. Then it stops the poller, closes the gateway's
// idle connections and the engine (whose prefetching rules give back what
// their blocks hold), and the Redis store. Shutdown is idempotent: later
// calls (and Close) wait for the first and return its result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.stop(ctx) })
	return s.stopErr
}

// Close stops the Server at once: listeners and connections are closed,
// requests in flight are cut off. It is Shutdown with a deadline that has
// passed, and is idempotent.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Shutdown(ctx)
	if errors.Is(err, ErrShutdownTimeout) {
		return nil // cutting requests off is what Close is for
	}
	return err
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stateClosed
}

func (s *Server) stop(ctx context.Context) error {
	s.mu.Lock()
	started := s.state == stateStarted
	s.state = stateClosed
	s.mu.Unlock()
	s.draining.Store(true)
	s.drainAPIs()
	close(s.quit)
	var cut atomic.Bool
	if started {
		s.log.Info("shutting down: draining requests in flight", "deadline", deadlineString(ctx))
		if s.debugSrv != nil {
			_ = s.debugSrv.Close() // profiles in progress are not requests to drain
		}
		var wg sync.WaitGroup
		for _, srv := range []*http.Server{s.httpSrv, s.adminSrv} {
			if srv == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := srv.Shutdown(ctx); err != nil {
					cut.Store(true)
					_ = srv.Close()
				}
			}()
		}
		if s.grpcSrv != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				done := make(chan struct{})
				go func() {
					s.grpcSrv.GracefulStop()
					close(done)
				}()
				select {
				case <-done:
				case <-ctx.Done():
					cut.Store(true)
					s.grpcSrv.Stop()
					<-done
				}
			}()
		}
		wg.Wait()
	}
	s.wg.Wait()
	if s.gw != nil {
		_ = s.gw.Close()
	}
	s.closeAPIs()
	// The engine's prefetching limiters give back what their blocks hold,
	// while the store is open.
	var err error
	if e := s.engines.Engine(); e != nil {
		err = e.Close()
	}
	if s.store != nil {
		err = errors.Join(err, s.store.Close())
	}
	if s.ownClient != nil {
		_ = s.ownClient.Close()
	}
	if cut.Load() {
		s.log.Warn("shutdown deadline passed: requests in flight were cut off")
		return errors.Join(ErrShutdownTimeout, err)
	}
	if started {
		s.log.Info("shut down")
	}
	return err
}

func deadlineString(ctx context.Context) string {
	d, ok := ctx.Deadline()
	if !ok {
		return "none"
	}
	return time.Until(d).Round(time.Millisecond).String()
}
