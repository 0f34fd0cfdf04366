package io.sumi.autoconfigure.actuate.internal;

import io.sumi.autoconfigure.actuate.internal.LedgerRow.LedgerRowId;
import java.time.Instant;
import java.util.Optional;
import org.springframework.data.domain.Page;
import org.springframework.data.domain.Pageable;
import org.springframework.data.repository.Repository;

/** The ledger's paging repository for operators (derived queries only: no SQL names the table). */
public interface LedgerRows extends Repository<LedgerRow, LedgerRowId> {

    Page<LedgerRow> findByStatus(String status, Pageable pageable);

    Page<LedgerRow> findByIdConsumerAndStatus(String consumer, String status, Pageable pageable);

    /** The oldest claim of a consumer whose lease has not ended at {@code now}. */
    Optional<LedgerRow> findFirstByIdConsumerAndStatusAndLeaseUntilAfterOrderByFirstSeenAtAsc(
            String consumer, String status, Instant now);

    long countByStatus(String status);
}
