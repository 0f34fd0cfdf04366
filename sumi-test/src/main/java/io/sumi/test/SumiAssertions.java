package io.sumi.test;

/**
 * AssertJ entry points over what Sumi's consumers did in the running test:
 *
 * <pre>{@code
 * import static io.sumi.test.SumiAssertions.assertThatSumi;
 *
 * assertThatSumi().consumer("mailer")
 *         .processedOnce("key-1")
 *         .hasOutcome(DeliveryOutcome.DUPLICATE, 2)
 *         .hasNoClaimInProgress()
 *         .hasNothingDeadLettered();
 * }</pre>
 */
public final class SumiAssertions {

    private SumiAssertions() {}

    /** Assertions over the running test's kit ({@link SumiTest#current()}). */
    public static SumiAssert assertThatSumi() {
        return new SumiAssert(SumiTest.current());
    }

    /** Assertions over {@code sumi}. */
    public static SumiAssert assertThat(SumiTest sumi) {
        return new SumiAssert(sumi);
    }
}
