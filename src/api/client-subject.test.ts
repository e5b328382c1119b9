import { describe, expect, test } from 'vitest';
import { clientSubject } from './client-subject.js';

describe('clientSubject', () => {
  test('an IPv4 client is its address, mapped or not', () => {
    expect(clientSubject('203.0.113.7')).toBe('ip:203.0.113.7');
    expect(clientSubject('::ffff:203.0.113.7')).toBe('ip:203.0.113.7');
  });

  test('every address of one IPv6 /64 is one subject, however it is written', () => {
    const subjects = [
      '2001:db8:1:2::1',
      '2001:db8:1:2:ffff:ffff:ffff:ffff',
      '2001:0db8:0001:0002:0000:0000:0000:abcd',
      '2001:DB8:1:2::1.2.3.4',
      '2001:db8:1:2::5%eth0',
    ].map(clientSubject);
    expect(new Set(subjects)).toEqual(new Set(['ip6:2001:db8:1:2::/64']));
  });

  test('another /64 is another subject', () => {
    expect(clientSubject('2001:db8:1:3::1')).not.toBe(clientSubject('2001:db8:1:2::1'));
    expect(clientSubject('::1')).toBe('ip6:0:0:0:0::/64');
  });
});
