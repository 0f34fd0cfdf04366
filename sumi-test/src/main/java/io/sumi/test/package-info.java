/**
 * Sumi's test kit for applications: {@link io.sumi.test.SumiTest} (duplicate delivery in one
 * line), {@link io.sumi.test.SumiAssertions#assertThatSumi()} (AssertJ assertions over what the
 * consumers did), {@link io.sumi.test.CrashInjector} (a JVM that dies between the effect and
 * {@code COMPLETED}); the outbox contract tests in {@code io.sumi.test.outbox}; the architecture
 * rules in {@code io.sumi.test.archunit}. Test scope only.
 */
@NullMarked
package io.sumi.test;

import org.jspecify.annotations.NullMarked;
