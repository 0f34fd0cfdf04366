package io.sumi.autoconfigure.actuate.internal;

import org.jspecify.annotations.Nullable;

/**
 * The outbox's write operations as the endpoint needs them, so that the endpoint does not name
 * {@code OutboxTable} (the outbox is an optional dependency of the starter).
 */
public interface OutboxControl {

    /** Re-drives one parked row; whether it was parked. */
    boolean redrive(long id);

    /** Re-drives the parked rows of {@code topic}, or all of them; how many. */
    int redriveParked(@Nullable String topic);
}
