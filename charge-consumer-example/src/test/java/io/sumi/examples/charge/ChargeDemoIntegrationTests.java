package io.sumi.examples.charge;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.examples.charge.demo.ChargeDemo;
import io.sumi.examples.charge.demo.DemoReport;
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
    }
}
