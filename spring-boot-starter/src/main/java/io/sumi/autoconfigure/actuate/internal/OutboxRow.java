package io.sumi.autoconfigure.actuate.internal;

import java.time.Instant;
import org.jspecify.annotations.Nullable;
import org.springframework.data.annotation.Id;
import org.springframework.data.relational.core.mapping.Table;

/**
 * A row of the outbox as the operator's read model sees it (Spring Data JDBC aggregate, read only).
 * The table is the configured {@code sumi.outbox.table-name}, supplied by {@link SumiTableNames};
 * the payload and headers are left out (they can be large, and may hold personal data).
 */
@Table
public record OutboxRow(
        @Id long id,
        String aggregateId,
        String topic,
        Instant createdAt,
        Instant availableAt,
        @Nullable Instant dispatchedAt,
        int attempts,
        @Nullable String lastError,
        @Nullable Instant parkedAt) {}
