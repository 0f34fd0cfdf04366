package io.sumi.outbox;

/**
 * What one dispatch round did.
 *
 * @param claimed rows claimed
 * @param sent rows sent and acknowledged
 * @param shadowed rows recorded as dispatched without sending (shadow mode)
 * @param skipped rows recorded as dispatched without sending (created before the cutoff)
 * @param failed rows whose send failed and that were scheduled again with backoff
 * @param parked rows whose send failed for the last allowed time and that were parked
 */
public record DispatchResult(int claimed, int sent, int shadowed, int skipped, int failed, int parked) {

    /** A round that found nothing to claim. */
    public static final DispatchResult NOTHING = new DispatchResult(0, 0, 0, 0, 0, 0);

    /** This result and {@code other}, counted together. */
    public DispatchResult plus(DispatchResult other) {
        return new DispatchResult(
                claimed + other.claimed,
                sent + other.sent,
                shadowed + other.shadowed,
                skipped + other.skipped,
                failed + other.failed,
                parked + other.parked);
    }
}
