/** ArchUnit rules for applications that use Sumi: {@link io.sumi.test.archunit.SumiArchitectureRules}. */
@NullMarked
package io.sumi.test.archunit;

import org.jspecify.annotations.NullMarked;
