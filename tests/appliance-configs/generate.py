"""Writes the saved appliance configurations of this directory (run it here:
`python3 generate.py`). They are test data in the format a NetScaler appliance
saves (`show ns runningConfig`, ns.conf): system, network, load balancing, SSL
and GSLB sections in that order, for two parent sites (dc1, dc2) and a child
site (child-eu, seed 001: no ADNS service). The bulk of the load-balancing
part is written in loops; the secrets are made-up hex, as the appliance saves
them encrypted. The .report and .sextant.conf files beside them are golden
output of `sextant import` (crates/sextant/tests/import.rs).
"""
import hashlib, sys
def hx(seed, n=64):
    out=''
    i=0
    while len(out)<n:
        out+=hashlib.sha256(f"{seed}{i}".encode()).hexdigest(); i+=1
    return out[:n]

ROOTS=[("a","198.41.0.4","2001:503:ba3e::2:30"),("b","170.247.170.2","2801:1b8:10::b"),("c","192.33.4.12","2001:500:2::c"),
("d","199.7.91.13","2001:500:2d::d"),("e","192.203.230.10","2001:500:a8::e"),("f","192.5.5.241","2001:500:2f::f"),
("g","192.112.36.4","2001:500:12::d0d"),("h","198.97.190.53","2001:500:1::53"),("i","192.36.148.17","2001:7fe::53"),
("j","192.58.128.30","2001:503:c27::2:30"),("k","193.0.14.129","2001:7fd::1"),("l","199.7.83.42","2001:500:9f::42"),("m","202.12.27.33","2001:dc3::35")]

def site_file(me, other):
    n, o = me, other
    L=[]
    a=L.append
    a("#NS13.1 Build 52.19")
    a(f"# Last modified by `save config`, Tue Dec  1 09:{12+n['k']}:44 2026")
    a(f"set ns config -IPAddress {n['nsip']} -netmask 255.255.255.0")
    a("enable ns feature WL SP LB CS SSL GSLB REWRITE RESPONDER AppFlow")
    a("enable ns mode FR L3 Edge USNIP PMTUD")
    a("set system parameter -minPasswordLen 8 -maxClient 40 -forcePasswordChange ENABLED")
    a(f"set system user nsroot {hx(n['name']+'root',128)} -encrypted -hashmethod SHA512 -timeout 900")
    a("add system group netops -timeout 900")
    a(f"add system user opsadmin {hx(n['name']+'ops',128)} -encrypted -hashmethod SHA512 -externalAuth DISABLED -timeout 900")
    a("bind system user opsadmin netops 10")
    a("bind system group netops -policyName superuser 10")
    a("set rsskeytype -rsstype ASYMMETRIC")
    a("set lacp -sysPriority 32768 -mac 52:54:00:%02x:10:01" % n['k'])
    a(f"set ns hostName {n['host']}")
    for i in (1,2):
        a(f'set interface 0/{i} -throughput 0 -bandwidthHigh 0 -bandwidthNormal 0 -intftype "Xen Interface" -ifnum 0/{i}')
    a('set interface LO/1 -haMonitor OFF -haHeartbeat OFF -throughput 0 -bandwidthHigh 0 -bandwidthNormal 0 -intftype Loopback -ifnum LO/1')
    a(f"add ns ip6 fe80::5054:ff:fe{n['k']:02x}:1001/64 -scope link-local -type NSIP -vlan 1 -vServer DISABLED -mgmtAccess ENABLED -dynamicRouting ENABLED")
    a(f"add ns ip {n['snip']} 255.255.255.0 -vServer DISABLED -mgmtAccess ENABLED")
    for vip in n['vips']:
        a(f"add ns ip {vip} 255.255.255.0 -type VIP -snmp DISABLED -hostRoute ENABLED")
    a(f"add vlan 20 -aliasName DMZ")
    a(f"add vlan 30 -aliasName BACKEND")
    a("bind vlan 20 -ifnum 0/2")
    a(f"bind vlan 30 -IPAddress {n['backend_snip']} 255.255.255.0")
    a("set nd6RAvariables -vlan 1")
    a("bind nd6RAvariables -vlan 1 -ipv6Prefix ::")
    a("set ipv6 -natprefix ::")
    a(f"add route 0.0.0.0 0.0.0.0 {n['gw']}")
    a(f"add route 172.16.0.0 255.240.0.0 {n['gw']}")
    a("set snmp alarm CPU-USAGE -thresholdValue 95 -normalValue 35")
    a("set snmp alarm MEMORY -thresholdValue 95 -normalValue 35")
    a("add snmp community public GET")
    a(f"add snmp trap generic 10.99.0.50 -communityName public")
    a("set ns encryptionParams -method AES256 -keyValue %s -encrypted -encryptmethod ENCMTHD_3 -kek -suffix 2026_11_01_08_00_00" % hx(n['name']+'kv',96))
    a("set ns tcpProfile nstcp_default_profile -mss 1460 -WS ENABLED -SACK ENABLED")
    a("set ns httpProfile nshttp_default_profile -dropInvalReqs ENABLED -markHttp09Inval ENABLED")
    a("add ns tcpProfile tcp_wan -WS ENABLED -SACK ENABLED -nagle ENABLED -maxBurst 10")
    a("add ns httpProfile http_strict -dropInvalReqs ENABLED -markConnReqInval ENABLED -maxHeaderLen 16384")
    a("set ns param -timezone \"GMT+01:00-CET-Europe/Berlin\" -cookieversion 1")
    a("add ns acl allow_mgmt ALLOW -srcIP = 10.99.0.0-10.99.0.255 -destIP = %s -priority 10" % n['nsip'])
    a("apply ns acls")
    a("add audit syslogAction sl_central 10.99.0.60 -logLevel ALL -dateFormat DDMMYYYY")
    a("add audit syslogPolicy sp_central true sl_central")
    a("bind audit syslogGlobal -policyName sp_central -priority 100")
    a("set audit nslogParams -dateFormat DDMMYYYY")
    a(f"add ntp server 10.99.0.1")
    a("enable ntp sync")
    # servers
    for i in range(1,25):
        a(f"add server srv_web{i:02d} {n['backend']}.{10+i}")
    for i in range(1,9):
        a(f"add server srv_api{i:02d} {n['backend']}.{60+i}")
    a(f"add server srv_gslb_www {n['vips'][0]}")
    a(f"add server srv_gslb_api {n['vips'][1]}")
    a(f"add server srv_adns {n['snip']}")
    # service groups and services
    a("add serviceGroup sg_web HTTP -maxClient 0 -maxReq 0 -cip ENABLED X-Forwarded-For -usip NO -useproxyport YES -cltTimeout 180 -svrTimeout 360 -CKA NO -TCPB NO -CMP YES")
    a("add serviceGroup sg_api HTTP -maxClient 0 -maxReq 0 -cip ENABLED X-Forwarded-For -usip NO -useproxyport YES -cltTimeout 180 -svrTimeout 360 -CKA NO -TCPB NO -CMP NO")
    a(f"add service svc_adns srv_adns ADNS 53 -gslb NONE -maxClient 0 -maxReq 0 -cip DISABLED -usip NO -useproxyport NO -sp OFF -cltTimeout 120 -svrTimeout 120 -CKA NO -TCPB NO -CMP NO")
    a(f"add service svc_adns_tcp {n['snip']} ADNS_TCP 53 -gslb NONE -maxClient 0 -maxReq 0 -cip DISABLED -usip NO -useproxyport NO -sp OFF -cltTimeout 180 -svrTimeout 360 -CKA NO -TCPB NO -CMP NO")
    for i in range(1,13):
        a(f"add service svc_legacy{i:02d} srv_web{i:02d} HTTP 8081 -gslb NONE -maxClient 0 -maxReq 0 -cip DISABLED -usip NO -useproxyport YES -sp OFF -cltTimeout 180 -svrTimeout 360 -CKA NO -TCPB NO -CMP NO")
    # ssl
    a("add ssl certKey ns-server-certificate -cert ns-server.cert -key ns-server.key")
    a("add ssl certKey wildcard_example_net -cert wildcard_example_net.crt -key wildcard_example_net.key -expiryMonitor ENABLED -notificationPeriod 30")
    a("add ssl certKey intermediate_ca -cert intermediate.crt -expiryMonitor DISABLED")
    a("link ssl certKey wildcard_example_net intermediate_ca")
    a("add ssl profile sslprof_fe -sslProfileType FrontEnd -ssl3 DISABLED -tls1 DISABLED -tls11 DISABLED -tls12 ENABLED -tls13 ENABLED -HSTS ENABLED -maxage 31536000")
    # lb vservers
    a(f"add lb vserver vs_www HTTP {n['vips'][0]} 8000 -persistenceType COOKIEINSERT -timeout 30 -cltTimeout 180")
    a(f"add lb vserver vs_www_ssl SSL {n['vips'][0]} 443 -persistenceType NONE -cltTimeout 180")
    a(f"add lb vserver vs_api HTTP {n['vips'][1]} 8001 -persistenceType NONE -lbMethod LEASTCONNECTION -cltTimeout 180")
    for i in range(1,7):
        a(f"add lb vserver vs_legacy{i:02d} HTTP {n['vips'][2]} {9000+i} -persistenceType SOURCEIP -timeout 10 -cltTimeout 180")
    a(f"add cs vserver cs_portal HTTP {n['vips'][2]} 80 -cltTimeout 180 -persistenceType NONE")
    a("add cs action csa_api -targetLBVserver vs_api")
    a('add cs policy csp_api -rule "HTTP.REQ.URL.STARTSWITH(\\"/api/\\")" -action csa_api')
    a('add responder action rsa_https redirect "\\"https://\\" + HTTP.REQ.HOSTNAME + HTTP.REQ.URL.PATH_AND_QUERY" -responseStatusCode 301')
    a("add responder policy rsp_https HTTP.REQ.IS_VALID rsa_https")
    a('add rewrite action rwa_hsts insert_http_header Strict-Transport-Security "\\"max-age=31536000\\""')
    a("add rewrite policy rwp_hsts true rwa_hsts")
    # gslb vservers
    a("add gslb vserver gv_www HTTP -backupLBMethod ROUNDROBIN -tolerance 0 -appflowLog DISABLED")
    a("add gslb vserver gv_api HTTP -lbMethod ROUNDROBIN -persistenceType SOURCEIP -timeout 5 -backupLBMethod ROUNDROBIN -tolerance 0 -appflowLog DISABLED -comment \"API, sticky per resolver\"")
    a("add gslb vserver gv_www_backup HTTP -tolerance 0 -appflowLog DISABLED")
    a("add gslb vserver gv_shop HTTP -lbMethod ROUNDROBIN -tolerance 0 -appflowLog DISABLED")
    a("add gslb vserver gv_cdn HTTP -dnsRecordType CNAME -lbMethod ROUNDROBIN -tolerance 0 -appflowLog DISABLED")
    # lb monitors
    a('add lb monitor mon_www HTTP -respCode 200 -httpRequest "GET /health" -LRTM DISABLED -interval 2 -resptimeout 1 -downTime 10')
    a('add lb monitor mon_legacy HTTP-ECV -send "GET /status HTTP/1.1\\r\\nHost: legacy.example.net\\r\\n\\r\\n" -recv OK -LRTM DISABLED')
    a("add lb monitor mon_ldap LDAP -scriptName nsldap.pl -dispatcherIP 127.0.0.1 -dispatcherPort 3013 -LRTM DISABLED -baseDN \"dc=example,dc=net\" -bindDN \"cn=probe,dc=example,dc=net\" -filter cn=probe -password %s -encrypted -encryptmethod ENCMTHD_3 -kek -suffix 2026_11_01_08_00_00" % hx(n['name']+'ldap',32))
    a("set lb monitor http HTTP -respCode 200 -httpRequest \"HEAD /\" -LRTM DISABLED -deviation 0 -interval 5 -resptimeout 2 -downTime 30")
    # gslb sites & services
    a(f"add gslb site {n['site']} {n['snip']} -publicIP {n['snip']}")
    a(f"add gslb site {o['site']} {o['snip']} -publicIP {o['snip']}")
    a("add gslb site child_eu 10.40.0.11 -publicIP 10.40.0.11 -parentSite site_dc1")
    for s,c in ((n,''),(o,'')):
        a(f"add gslb service gs_www_{s['k2']} {'srv_gslb_www' if s is n else s['vips'][0]} HTTP 80 -publicIP {s['vips'][0]} -publicPort 80 -maxClient 0 -siteName {s['site']} -sitePersistence ConnectionProxy -cltTimeout 180 -svrTimeout 360 -downStateFlush ENABLED")
        a(f"add gslb service gs_api_{s['k2']} {s['vips'][1]} HTTP 8080 -publicIP {s['vips'][1]} -publicPort 8080 -maxClient 0 -siteName {s['site']} -cltTimeout 180 -svrTimeout 360 -downStateFlush ENABLED -comment \"API in {s['k2'].upper()}\"")
    for s2 in (n,o):
        a(f"add gslb service gs_cdn_{s2['k2']} -cnameEntry cdn-{s2['k2']}.example.org -siteName {s2['site']} -cltTimeout 180 -svrTimeout 360 -downStateFlush ENABLED")
    a("add gslb service gs_shop_eu 10.40.1.20 HTTP 80 -publicIP 10.40.1.20 -publicPort 80 -maxClient 0 -siteName child_eu -cltTimeout 180 -svrTimeout 360 -downStateFlush ENABLED")
    a("set gslb site site_dc1 -backupParentlist site_dc2")
    a("set gslb parameter -ldnsprobeOrder PING DNS TCP -GSLBSvcStateDelayTime 10")
    # binds (show ns runningConfig writes binds after the objects)
    a("bind lb vserver vs_www sg_web")
    a("bind lb vserver vs_api sg_api")
    for i in range(1,7):
        a(f"bind lb vserver vs_legacy{i:02d} svc_legacy{i:02d}")
    a("bind lb vserver vs_www -policyName rwp_hsts -priority 100 -gotoPriorityExpression END -type RESPONSE")
    a("bind cs vserver cs_portal -policyName csp_api -priority 100")
    a("bind cs vserver cs_portal -lbvserver vs_www")
    a("bind cs vserver cs_portal -policyName rsp_https -priority 100 -gotoPriorityExpression END -type REQUEST")
    a("bind gslb vserver gv_www -serviceName gs_www_dc1 -weight 60")
    a("bind gslb vserver gv_www -serviceName gs_www_dc2 -weight 40")
    a("bind gslb vserver gv_www -domainName www.gslb.example.net -TTL 5")
    a("bind gslb vserver gv_api -serviceName gs_api_dc1")
    a("bind gslb vserver gv_api -serviceName gs_api_dc2")
    a("bind gslb vserver gv_api -domainName api.gslb.example.net -TTL 5")
    a("bind gslb vserver gv_shop -serviceName gs_shop_eu")
    a("bind gslb vserver gv_cdn -serviceName gs_cdn_dc1")
    a("bind gslb vserver gv_cdn -serviceName gs_cdn_dc2")
    a("bind gslb vserver gv_cdn -domainName cdn.gslb.example.net -TTL 5")
    a("bind gslb vserver gv_shop -domainName shop.gslb.example.net -TTL 5")
    for i in range(1,25):
        a(f"bind serviceGroup sg_web srv_web{i:02d} 80")
    for i in range(1,9):
        a(f"bind serviceGroup sg_api srv_api{i:02d} 8080")
    a("bind serviceGroup sg_web -monitorName http")
    a("bind serviceGroup sg_api -monitorName tcp")
    for i in range(1,13):
        a(f"bind service svc_legacy{i:02d} -monitorName mon_legacy")
    for s in (n,o):
        a(f"bind gslb service gs_www_{s['k2']} -monitorName mon_www")
        a(f"bind gslb service gs_api_{s['k2']} -monitorName tcp")
    a("add dns zone gslb.example.net -proxyMode NO")
    a("add dns soaRec gslb.example.net -originServer ns1.gslb.example.net -contact hostmaster.example.net -serial 2026120101 -refresh 3600 -retry 3 -expire 3600 -minimum 5 -TTL 3600")
    a("add dns nsRec gslb.example.net ns1.gslb.example.net -TTL 3600")
    a("add dns nsRec gslb.example.net ns2.gslb.example.net -TTL 3600")
    a(f"add dns addRec ns1.gslb.example.net {n['snip'] if n['k']==1 else o['snip']} -TTL 3600")
    a(f"add dns addRec ns2.gslb.example.net {o['snip'] if n['k']==1 else n['snip']} -TTL 3600")
    a("add dns cnameRec status.gslb.example.net www.gslb.example.net -TTL 300")
    a('add dns txtRec gslb.example.net "v=spf1 -all" -TTL 3600')
    a("add dns mxRec gslb.example.net -mx mail.gslb.example.net -pref 10 -TTL 3600")
    a(f"add dns addRec mail.gslb.example.net {n['vips'][2]} -TTL 3600")
    a("add dns srvRec _sip._tcp.gslb.example.net sip.gslb.example.net -priority 10 -weight 60 -port 5060 -TTL 3600")
    a(f"add dns addRec sip.gslb.example.net {n['vips'][2]} -TTL 300")
    a('add dns policy pol_no_any "DNS.REQ.QUESTION.TYPE.EQ(ANY)" dns_default_act_Drop')
    a("bind dns global pol_no_any 100 -gotoPriorityExpression END -type REQ_DEFAULT")
    for l,v4,v6 in ROOTS:
        a(f"add dns nsRec . {l}.root-servers.net -TTL 3600000")
    for l,v4,v6 in ROOTS:
        a(f"add dns addRec {l}.root-servers.net {v4} -TTL 3600000")
    for l,v4,v6 in ROOTS:
        a(f"add dns aaaaRec {l}.root-servers.net {v6} -TTL 3600000")
    a("set dns parameter -cacheRecords YES -nameLookupPriority DNS -recursion DISABLED -resolutionOrder OnlyAQuery")
    a("add dns nameServer 10.99.0.53")
    for s in (n,o,dict(snip='10.40.0.11',site='child_eu')):
        a(f"set ns rpcNode {s['snip']} -password {hx(n['name']+s['site'],96)} -encrypted -encryptmethod ENCMTHD_3 -kek -suffix 2026_11_01_08_00_00 -srcIP {n['snip'] if s is n else '*'}")
    a("bind ssl vserver vs_www_ssl -certkeyName wildcard_example_net")
    a("bind ssl vserver vs_www_ssl -eccCurveName P_256")
    a("set ssl vserver vs_www_ssl -sslProfile sslprof_fe")
    a("bind ssl service nsrpcs-127.0.0.1-3009 -certkeyName ns-server-certificate")
    a("bind ssl service nskrpcs-127.0.0.1-3009 -certkeyName ns-server-certificate")
    a("set ssl service nshttps-::1l-443 -ssl3 DISABLED")
    a("set ssl service nshttps-127.0.0.1-443 -ssl3 DISABLED")
    a("bind ssl service nshttps-127.0.0.1-443 -certkeyName ns-server-certificate")
    a("set appflow param -templateRefresh 60 -httpUrl ENABLED")
    a("add appflow collector af_collector -IPAddress 10.99.0.70")
    a("set ns diameter -identity netscaler.com -realm com")
    a("set ns tcpbufParam -memLimit 64")
    a("set cmp parameter -cmpLevel optimal -quantumSize 57344")
    a("set cache parameter -memLimit 0 -via \"NS-CACHE-10.0: 12\"")
    a("set aaa parameter -maxAAAUsers 5")
    a("set ns rateLimiting -tokenBucketSize 1")
    a("set videooptimization parameter -RandomSamplingPercentage 0.00e+00")
    a("set ns hostName %s" % n['host']) if False else None
    return "\n".join(L)+"\n"

dc1=dict(k=1,k2='dc1',name='dc1',host='ns-dc1',site='site_dc1',nsip='10.20.0.10',snip='10.20.0.11',backend_snip='10.20.2.11',vips=['10.20.1.20','10.20.1.21','10.20.1.22'],backend='10.20.2',gw='10.20.0.1')
dc2=dict(k=2,k2='dc2',name='dc2',host='ns-dc2',site='site_dc2',nsip='10.30.0.10',snip='10.30.0.11',backend_snip='10.30.2.11',vips=['10.30.1.20','10.30.1.21','10.30.1.22'],backend='10.30.2',gw='10.30.0.1')
open('dc1-ns.conf','w').write(site_file(dc1,dc2))
open('dc2-ns.conf','w').write(site_file(dc2,dc1))

def child_file():
    L=[]; a=L.append
    a("#NS13.1 Build 52.19")
    a("# Last modified by `save config`, Tue Dec  1 11:02:17 2026")
    a("set ns config -IPAddress 10.40.0.10 -netmask 255.255.255.0")
    a("enable ns feature WL LB SSL GSLB")
    a("enable ns mode FR L3 Edge USNIP PMTUD")
    a("set system parameter -minPasswordLen 8")
    a(f"set system user nsroot {hx('childroot',128)} -encrypted -hashmethod SHA512 -timeout 900")
    a("set rsskeytype -rsstype ASYMMETRIC")
    a("set ns hostName ns-child-eu")
    a('set interface 0/1 -throughput 0 -bandwidthHigh 0 -bandwidthNormal 0 -intftype "Xen Interface" -ifnum 0/1')
    a("add ns ip 10.40.0.11 255.255.255.0 -vServer DISABLED -mgmtAccess ENABLED")
    a("add ns ip 10.40.1.20 255.255.255.0 -type VIP -snmp DISABLED")
    a("add route 0.0.0.0 0.0.0.0 10.40.0.1")
    a("set ns tcpProfile nstcp_default_profile -mss 1460")
    a("add ntp server 10.99.0.1")
    for i in range(1,41):
        a(f"add server srv_shop{i:02d} 10.40.2.{10+i}")
    a("add serviceGroup sg_shop HTTP -maxClient 0 -maxReq 0 -cip ENABLED X-Forwarded-For -usip NO -useproxyport YES -cltTimeout 180 -svrTimeout 360 -CKA NO -TCPB NO -CMP YES")
    a("add ssl certKey ns-server-certificate -cert ns-server.cert -key ns-server.key")
    a("add lb vserver vs_shop HTTP 10.40.1.20 80 -persistenceType COOKIEINSERT -timeout 30 -cltTimeout 180")
    a("add lb vserver vs_shop_ssl SSL 10.40.1.20 443 -persistenceType NONE -cltTimeout 180")
    a("add gslb site site_dc1 10.20.0.11 -publicIP 10.20.0.11")
    a("add gslb site child_eu 10.40.0.11 -publicIP 10.40.0.11 -parentSite site_dc1")
    a("add gslb service gs_shop_eu 10.40.1.20 HTTP 80 -publicIP 10.40.1.20 -publicPort 80 -maxClient 0 -siteName child_eu -cltTimeout 180 -svrTimeout 360 -downStateFlush ENABLED")
    a("add lb monitor mon_shop HTTP -respCode 200 -httpRequest \"GET /healthz\" -LRTM DISABLED -interval 2 -resptimeout 1")
    a("bind lb vserver vs_shop sg_shop")
    for i in range(1,41):
        a(f"bind serviceGroup sg_shop srv_shop{i:02d} 80")
    a("bind serviceGroup sg_shop -monitorName http")
    a("bind gslb service gs_shop_eu -monitorName mon_shop")
    for l,v4,v6 in ROOTS:
        a(f"add dns nsRec . {l}.root-servers.net -TTL 3600000")
    for l,v4,v6 in ROOTS:
        a(f"add dns addRec {l}.root-servers.net {v4} -TTL 3600000")
    for ip in ("10.20.0.11","10.40.0.11"):
        a(f"set ns rpcNode {ip} -password {hx('child'+ip,96)} -encrypted -encryptmethod ENCMTHD_3 -kek -suffix 2026_11_01_08_00_00 -srcIP {'10.40.0.11' if ip=='10.40.0.11' else '*'}")
    a("bind ssl vserver vs_shop_ssl -certkeyName ns-server-certificate")
    a("bind ssl service nsrpcs-127.0.0.1-3009 -certkeyName ns-server-certificate")
    a("set ssl service nshttps-127.0.0.1-443 -ssl3 DISABLED")
    return "\n".join(L)+"\n"
open('child-eu-ns.conf','w').write(child_file())
