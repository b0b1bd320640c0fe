// Package sdklog sends the AWS SDK's log lines to a slog.Logger.
package sdklog

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/smithy-go/logging"
)

// New returns an SDK logger writing to log. The DynamoDB client warns on
// every error response that carries no x-amz-crc32 header, which DynamoDB
// Local never sends on errors (aws/aws-sdk-go-v2#3545); a duplicate
// request is such an error response by design, so that one warning is
// logged at debug level. Other warnings stay warnings. A nil log discards.
func New(log *slog.Logger) logging.Logger {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "aws-sdk")
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		msg := fmt.Sprintf(format, v...)
		if c == logging.Warn && !strings.Contains(msg, "response did not match expected checksum, 0,") {
			log.Warn(msg)
			return
		}
		log.Debug(msg)
	})
}
