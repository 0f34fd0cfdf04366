package io.sumi.store.redis;

import org.springframework.dao.TransientDataAccessResourceException;

/**
 * A write of the Redis ledger reached fewer replicas than it waits for
 * ({@link RedisProcessedMessageStore.Builder#waitForReplicas}): it happened on the master, and a
 * failover before the replicas have it loses it. Transient: the message is redelivered.
 *
 * @since 0.1.0
 */
public class RedisLedgerReplicationException extends TransientDataAccessResourceException {

    private static final long serialVersionUID = 1L;

    public RedisLedgerReplicationException(String message) {
        super(message);
    }
}
