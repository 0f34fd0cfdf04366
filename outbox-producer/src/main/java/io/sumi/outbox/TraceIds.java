package io.sumi.outbox;

import org.jspecify.annotations.Nullable;
import org.slf4j.MDC;

/** The default trace id source: the MDC. */
final class TraceIds {

    private TraceIds() {}

    static @Nullable String fromMdc() {
        for (String key : OutboxHeaders.MDC_TRACE_ID_KEYS) {
            String value = MDC.get(key);
            if (value != null && !value.isBlank()) {
                return value;
            }
        }
        return null;
    }
}
