package io.sumi.autoconfigure.actuate.internal;

import org.springframework.data.domain.Page;
import org.springframework.data.domain.Pageable;
import org.springframework.data.repository.Repository;

/** The outbox's paging repository for operators (derived queries only: no SQL names the table). */
public interface OutboxRows extends Repository<OutboxRow, Long> {

    /** Parked rows: not dispatched, parked after too many failed sends. */
    Page<OutboxRow> findByDispatchedAtIsNullAndParkedAtIsNotNull(Pageable pageable);

    Page<OutboxRow> findByTopicAndDispatchedAtIsNullAndParkedAtIsNotNull(String topic, Pageable pageable);
}
