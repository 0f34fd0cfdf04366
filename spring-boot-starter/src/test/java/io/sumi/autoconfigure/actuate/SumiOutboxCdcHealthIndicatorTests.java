package io.sumi.autoconfigure.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.outbox.cdc.SlotStatus;
import org.junit.jupiter.api.Test;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.util.unit.DataSize;

/**
 * The outbox CDC health indicator, one test per state of the slot: missing, inactive, active within
 * the WAL limit, active past it. The query behind
 * {@link SlotStatus} runs on a real slot in the CDC module's integration tests; here the states are
 * set, so that each one is reached on every run.
 */
class SumiOutboxCdcHealthIndicatorTests {

    private static final DataSize LIMIT = DataSize.ofMegabytes(1);

    private static Health health(SlotStatus slot, boolean streamingHere) {
        return new SumiOutboxCdcHealthIndicator("sumi_outbox", () -> slot, () -> streamingHere, LIMIT).health();
    }

    @Test
    void aSlotThatDoesNotExistIsDownWithTheAction() {
        Health health = health(SlotStatus.MISSING, false);

        assertThat(health.getStatus()).isEqualTo(Status.DOWN);
        assertThat(health.getDetails())
                .containsEntry("slot", "sumi_outbox")
                .containsEntry("slotExists", false)
                .containsEntry("slotActive", false)
                .containsEntry("streamingHere", false);
        assertThat((String) health.getDetails().get("action")).contains("no instance streams the slot");
    }

    @Test
    void aSlotThatNobodyStreamsIsDownEvenWithLittleWal() {
        Health health = health(new SlotStatus(true, false, 1_024, 512), false);

        assertThat(health.getStatus()).isEqualTo(Status.DOWN);
        assertThat(health.getDetails())
                .containsEntry("slotExists", true)
                .containsEntry("slotActive", false)
                .containsEntry("retainedWalBytes", 1_024L)
                .containsEntry("lagBytes", 512L);
        assertThat((String) health.getDetails().get("action")).contains("no instance streams the slot");
    }

    @Test
    void anActiveSlotWithinTheLimitIsUpWithoutAction() {
        Health here = health(new SlotStatus(true, true, LIMIT.toBytes(), 0), true);
        Health elsewhere = health(new SlotStatus(true, true, 10, 0), false);

        assertThat(here.getStatus()).as("at the limit exactly").isEqualTo(Status.UP);
        assertThat(here.getDetails())
                .containsEntry("streamingHere", true)
                .containsEntry("maxRetainedWalBytes", LIMIT.toBytes())
                .doesNotContainKey("action");
        assertThat(elsewhere.getStatus())
                .as("another instance streams: the fleet is healthy")
                .isEqualTo(Status.UP);
        assertThat(elsewhere.getDetails()).containsEntry("streamingHere", false);
    }

    @Test
    void anActiveSlotPastTheLimitIsDownSayingTheEngineDoesNotConfirm() {
        Health health = health(new SlotStatus(true, true, LIMIT.toBytes() + 1, LIMIT.toBytes()), true);

        assertThat(health.getStatus()).isEqualTo(Status.DOWN);
        assertThat((String) health.getDetails().get("action")).contains("retains more WAL than allowed");
    }
}
