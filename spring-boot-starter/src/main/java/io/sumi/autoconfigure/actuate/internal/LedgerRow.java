package io.sumi.autoconfigure.actuate.internal;

import java.time.Instant;
import org.jspecify.annotations.Nullable;
import org.springframework.data.annotation.Id;
import org.springframework.data.relational.core.mapping.Table;

/**
 * A row of the ledger as the operator's read model sees it (Spring Data JDBC aggregate, read only).
 * The table is the configured {@code sumi.ledger.table-name}, supplied by {@link SumiTableNames};
 * the claim token and the fingerprint are left out.
 *
 * @param id the primary key, {@code (consumer, message_id)}
 */
@Table
public record LedgerRow(
        @Id LedgerRowId id,
        String status,
        @Nullable Instant leaseUntil,
        int attempts,
        @Nullable String lastError,
        Instant firstSeenAt,
        @Nullable Instant processedAt) {

    /** The composite primary key of a ledger row. */
    public record LedgerRowId(String consumer, String messageId) {}
}
