package io.sumi.kafka.share;

import io.sumi.consumer.binder.BusyPolicy;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Share-group listeners ({@code sumi.kafka.share.*}).
 *
 * @param busyRetryInterval how long after renewing a held record (one whose key another consumer
 *     holds, whose ledger row awaits reconciliation, met an unreachable ledger or an open budget) a
 *     share consumer claims its key again, when the record has come back; keep it well below the
 *     group's {@code group.share.record.lock.duration.ms} (30 s by default)
 * @param busyMaxWait how long a record whose ledger row awaits reconciliation is held (renewed,
 *     never counted as a delivery) before it is released, which counts a delivery; a busy key is
 *     held for as long as its holder's lease lives (renewed while the holder's handler runs, at most
 *     its max run time), an unreachable ledger for as long as the outage lasts, an open budget for
 *     as long as it is open
 * @since 0.1.0
 */
@ConfigurationProperties("sumi.kafka.share")
public record SumiKafkaShareProperties(
        @DefaultValue("1s") Duration busyRetryInterval,
        @DefaultValue("5m") Duration busyMaxWait) {

    /** The busy policy these settings describe (the share binder holds busy keys while their holder lives). */
    public BusyPolicy busyPolicy() {
        return BusyPolicy.of(busyRetryInterval, busyMaxWait);
    }
}
