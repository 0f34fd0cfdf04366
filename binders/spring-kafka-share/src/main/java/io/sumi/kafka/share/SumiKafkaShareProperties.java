package io.sumi.kafka.share;

import io.sumi.consumer.binder.BusyPolicy;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Share-group listeners ({@code sumi.kafka.share.*}).
 *
 * @param busyRetryInterval how long a share consumer waits with a record whose key another
 *     consumer holds (or whose ledger row awaits reconciliation, or while the ledger is
 *     unreachable, or the handler's budget is open) before it renews the record's acquisition lock
 *     and claims the key again; keep it well below the group's
 *     {@code group.share.record.lock.duration.ms} (30 s by default)
 * @param busyMaxWait the least time such a record is held (renewed, never counted as a delivery)
 *     before it is released, which counts a delivery; a busy key is held at least until the
 *     holder's lease it first met has ended, and through a ledger outage for as long as it lasts
 * @since 0.1.0
 */
@ConfigurationProperties("sumi.kafka.share")
public record SumiKafkaShareProperties(
        @DefaultValue("1s") Duration busyRetryInterval,
        @DefaultValue("5m") Duration busyMaxWait) {

    /** The busy policy these settings describe. */
    public BusyPolicy busyPolicy() {
        return BusyPolicy.of(busyRetryInterval, busyMaxWait);
    }
}
