package io.sumi.examples.charge;

import static io.sumi.test.SumiAssertions.assertThatSumi;
import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.examples.charge.demo.ChargeDemo;
import io.sumi.examples.charge.demo.DemoReport;
import io.sumi.test.ConsumerAssert;
import io.sumi.test.DeliveryOutcome;
import io.sumi.test.SumiTest;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * The demo, as {@code java -jar} runs it: in-process Kafka, PostgreSQL and payment provider,
 * crashes between the charge and the ledger, a provider outage, a budget of 40 calls per 4 seconds.
 * Every order is charged exactly once; the budget opens, pauses and resumes the consumer; nothing is
 * dead-lettered.
 */
@SpringBootTest(classes = ChargeConsumerApplication.class)
class ChargeDemoIntegrationTests {

    @Autowired
    ChargeDemo demo;

    @Autowired
    SumiTest sumi;

    @Test
    void everyOrderIsChargedExactlyOnceWhileTheBudgetPausesAndResumesTheConsumer() throws Exception {
        DemoReport report = demo.run();

        assertThat(report.ok()).as(report.format()).isTrue();
        assertThat(report.realCharges()).isEqualTo(report.uniqueKeys()).isEqualTo(report.orders());
        assertThat(report.providerCalls()).isGreaterThan(report.realCharges());
        assertThat(report.replays()).isEqualTo(report.crashes());
        assertThat(report.budgetOpenings()).isGreaterThanOrEqualTo(1);
        assertThat(report.pauses()).isGreaterThanOrEqualTo(1);
        assertThat(report.resumes()).isEqualTo(report.pauses());
        assertThat(report.deadLettered()).isZero();
        // Two instances spent one fleet budget: the sibling got calls, and no window exceeded the limit.
        assertThat(report.callsSibling()).isPositive();
        assertThat(report.mostSpentInOneWindow()).isPositive().isLessThanOrEqualTo(report.limit());
        System.out.println(report.format());

        // Sumi's test kit saw the same, per key: a crashed order's charge ran twice (the provider
        // absorbed the second call under the same Idempotency-Key); every other order's once,
        // its duplicate skipped; no claim left, nothing in the dead-letter topic.
        ConsumerAssert charges = assertThatSumi()
                .consumer("charges")
                .isGuardedBySumi()
                .hasNoClaimInProgress()
                .hasNothingDeadLettered();
        assertThat(sumi.crashes().crashes("charges"))
                .isEqualTo(report.crashes())
                .isPositive();
        for (int order = 1; order <= report.orders(); order++) {
            String key = String.format("order-%04d", order);
            if (order % 15 == 0) {
                charges.ranHandler(key, 2);
            } else {
                charges.processedOnce(key);
            }
        }
        charges.hasOutcome(DeliveryOutcome.DUPLICATE, report.duplicatesSent());
    }
}
