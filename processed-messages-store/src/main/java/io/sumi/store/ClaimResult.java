package io.sumi.store;

import java.util.Objects;

/**
 * The answer to a claim: what it found, and the ledger row as it stands after the claim.
 *
 * <p>For {@link ClaimOutcome#CLAIMED} the row is the caller's claim (its {@code claimToken} is the
 * caller's); for {@link ClaimOutcome#DUPLICATE} and {@link ClaimOutcome#BUSY} it is the row that
 * stopped the claim, so callers can compare fingerprints without a second read.
 *
 * @param outcome what the claim found
 * @param message the ledger row
 */
public record ClaimResult(ClaimOutcome outcome, ProcessedMessage message) {

    public ClaimResult {
        Objects.requireNonNull(outcome, "outcome");
        Objects.requireNonNull(message, "message");
    }

    /**
     * Derives the outcome of a claim from the row it returned.
     *
     * @param row the row after the claim statement
     * @param claimToken the token the claim tried to write
     */
    public static ClaimResult of(ProcessedMessage row, long claimToken) {
        if (row.claimToken() == claimToken) {
            return new ClaimResult(ClaimOutcome.CLAIMED, row);
        }
        return new ClaimResult(row.isCompleted() ? ClaimOutcome.DUPLICATE : ClaimOutcome.BUSY, row);
    }
}
